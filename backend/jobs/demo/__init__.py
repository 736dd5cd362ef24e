"""Demo handlers for the job queue, as an app of its own: add ``"jobs.demo"`` to
``INSTALLED_APPS`` (after ``"jobs"``) to get the ``demo.*`` job types."""
