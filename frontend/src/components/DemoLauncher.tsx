import { Link } from 'react-router';
import type { Job, JobTypeInfo } from '../api/types';

export interface LaunchedJob {
  job: Job;
  at: number;
}

/** One button per demo job type, each enqueuing it with its example payload. */
export function DemoLauncher({
  types,
  pendingType,
  launched,
  error,
  onLaunch,
}: {
  types: JobTypeInfo[];
  pendingType: string | null;
  launched: LaunchedJob[];
  error: string | null;
  onLaunch: (type: JobTypeInfo) => void;
}) {
  return (
    <div className="demo">
      <ul className="demo__list">
        {types.map((t) => (
          <li key={t.type} className="demo__item">
            <button
              type="button"
              className="button button--demo"
              disabled={pendingType !== null}
              onClick={() => onLaunch(t)}
              aria-describedby={`demo-desc-${t.type}`}
            >
              {pendingType === t.type ? 'Enqueuing…' : `Enqueue ${t.type}`}
            </button>
            <span id={`demo-desc-${t.type}`} className="demo__desc">
              {t.description}
            </span>
          </li>
        ))}
      </ul>
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
      {launched.length > 0 && (
        <div role="status" className="demo__launched">
          <span>Enqueued:</span>
          <ul>
            {launched.map(({ job }) => (
              <li key={job.id}>
                <Link to={`/jobs/${job.id}`}>
                  <span className="mono">{job.type}</span> {job.id.slice(0, 8)}
                </Link>
              </li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}
