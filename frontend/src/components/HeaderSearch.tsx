import { useState } from 'react';
import { useNavigate } from 'react-router';
import { useFindJob } from '../api/hooks';
import { errorMessage } from '../lib/errors';

/** Go to a job by its id, a unique id prefix (as the lists show: 8 characters) or its idempotency key. */
export function HeaderSearch() {
  const navigate = useNavigate();
  const find = useFindJob();
  const [query, setQuery] = useState('');
  const [problem, setProblem] = useState<string | null>(null);

  async function submit() {
    if (query.trim() === '') return;
    setProblem(null);
    try {
      const found = await find.mutateAsync(query);
      if (found.kind === 'job') {
        setQuery('');
        void navigate(`/jobs/${found.id}`);
      } else {
        setProblem(found.message);
      }
    } catch (error) {
      setProblem(errorMessage(error));
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
      onKeyDown={(e) => {
        if (e.key === 'Escape') setProblem(null);
      }}
    >
      <label htmlFor="header-search-input" className="sr-only">
        Job id, short id or idempotency key
      </label>
      <input
        id="header-search-input"
        type="search"
        className="mono"
        placeholder="Job id, short id or key"
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
      <button type="submit" className="button button--small" disabled={find.isPending || query.trim() === ''}>
        Find
      </button>
      {problem && (
        <span id="header-search-problem" className="header-search__problem" role="alert">
          {problem}
          <button
            type="button"
            className="header-search__dismiss"
            aria-label="Dismiss"
            onClick={() => setProblem(null)}
          >
            ×
          </button>
        </span>
      )}
    </form>
  );
}
