import { useState } from 'react';
import { useNavigate } from 'react-router';
import { api } from '../api/client';
import { errorMessage } from '../lib/errors';
import { findJob } from '../lib/search';

const lookups = {
  getJob: (id: string) => api.getJob(id),
  byIdempotencyKey: async (key: string) => (await api.listJobs({ idempotencyKey: key, limit: 1, offset: 0 })).results[0],
};

/** Go to a job by its id or its idempotency key. */
export function HeaderSearch() {
  const navigate = useNavigate();
  const [query, setQuery] = useState('');
  const [pending, setPending] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);

  async function submit() {
    if (query.trim() === '') return;
    setPending(true);
    setProblem(null);
    try {
      const found = await findJob(query, lookups);
      if (found.kind === 'job') {
        setQuery('');
        void navigate(`/jobs/${found.id}`);
      } else {
        setProblem(`No job has the id or idempotency key “${found.query}”.`);
      }
    } catch (error) {
      setProblem(errorMessage(error));
    } finally {
      setPending(false);
    }
  }

  return (
    <form
      className="header-search"
      role="search"
      aria-label="Find a job"
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      <label htmlFor="header-search-input" className="sr-only">
        Job id or idempotency key
      </label>
      <input
        id="header-search-input"
        type="search"
        className="mono"
        placeholder="Job id or idempotency key"
        autoComplete="off"
        spellCheck={false}
        maxLength={255}
        value={query}
        aria-invalid={problem !== null}
        aria-describedby={problem ? 'header-search-problem' : undefined}
        onChange={(e) => {
          setQuery(e.target.value);
          setProblem(null);
        }}
      />
      <button type="submit" className="button button--small" disabled={pending || query.trim() === ''}>
        Find
      </button>
      {problem && (
        <span id="header-search-problem" className="header-search__problem" role="alert">
          {problem}
        </span>
      )}
    </form>
  );
}
