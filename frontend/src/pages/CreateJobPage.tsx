import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { api } from '../api/client';
import { useBulkCreate, useConfig, useCreateJob } from '../api/hooks';
import type { ApiConfig, BulkCreateResult, CreateMatch, Job, JobTypeInfo } from '../api/types';
import { DemoLauncher, type LaunchedJob } from '../components/DemoLauncher';
import { FormField, KeyField, NumberField } from '../components/FormField';
import { JsonEditor } from '../components/JsonEditor';
import { ErrorState, Loading } from '../components/States';
import { errorMessage } from '../lib/errors';
import {
  buildCreateRequest,
  bulkFieldErrors,
  bulkFromTemplate,
  initialValues,
  parseCount,
  splitServerErrors,
  type CreateFormValues,
  KEY_MAX_LENGTH,
  type FormErrors,
  type Schedule,
} from '../lib/createForm';
import { namedQueues } from '../lib/queue';
import { toDateTimeLocal } from '../lib/time';

function CreateForm({ config }: { config: ApiConfig }) {
  const [values, setValues] = useState<CreateFormValues>(() => initialValues(config));
  const [payloadEdited, setPayloadEdited] = useState(false);
  const [clientErrors, setClientErrors] = useState<FormErrors>({});
  const [created, setCreated] = useState<{ job: Job; created: boolean; matched: CreateMatch | null } | null>(null);
  const [count, setCount] = useState('1');
  const [countError, setCountError] = useState<string | null>(null);
  const [bulkCreated, setBulkCreated] = useState<{ result: BulkCreateResult; type: string } | null>(null);
  const create = useCreateJob();
  const bulk = useBulkCreate();
  const bulkMax = config.limits.bulk_create_max;

  const failure = create.error ?? bulk.error;
  const server = create.error
    ? splitServerErrors(create.error.fieldErrors)
    : bulk.error
      ? splitServerErrors(bulkFieldErrors(bulk.error.fieldErrors))
      : { fields: {}, general: [] };
  const unreachable = failure?.unreachable ?? false;
  const pending = create.isPending || bulk.isPending;
  const errorsFor = (field: keyof FormErrors) => [...(clientErrors[field] ?? []), ...(server.fields[field] ?? [])];
  const selectedType = config.job_types.find((t) => t.type === values.type);
  const knownQueues = namedQueues(config.worker.queues);
  const workerTimeout = config.worker.timeout_seconds > 0 ? `${config.worker.timeout_seconds} s` : 'no limit';

  function set<K extends keyof CreateFormValues>(key: K, value: CreateFormValues[K]) {
    setValues((prev) => ({ ...prev, [key]: value }));
  }

  function onTypeChange(type: string) {
    const info = config.job_types.find((t) => t.type === type);
    setValues((prev) => ({
      ...prev,
      type,
      payload: !payloadEdited && info ? JSON.stringify(info.example_payload ?? {}, null, 2) : prev.payload,
    }));
  }

  function onSubmit(e: FormEvent) {
    e.preventDefault();
    setCreated(null);
    setBulkCreated(null);
    const built = buildCreateRequest(values, config.limits, Date.now());
    const howMany = parseCount(count, bulkMax);
    setCountError(howMany.ok ? null : howMany.error);
    if (!built.ok) {
      setClientErrors(built.errors);
      return;
    }
    setClientErrors({});
    if (!howMany.ok) return;
    create.reset();
    bulk.reset();
    if (howMany.count === 1) {
      create.mutate(built.input, { onSuccess: (res) => setCreated(res) });
    } else {
      const type = built.input.type;
      bulk.mutate(
        { jobs: bulkFromTemplate(built.input, howMany.count) },
        { onSuccess: (result) => setBulkCreated({ result, type }) },
      );
    }
  }

  return (
    <form className="form" noValidate onSubmit={onSubmit} aria-labelledby="create-heading">
      {(server.general.length > 0 || unreachable) && (
        <div className="form-error" role="alert">
          {unreachable ? errorMessage(failure) : server.general.map((m) => <p key={m}>{m}</p>)}
        </div>
      )}
      {bulkCreated && (
        <div className="notice" role="status">
          Created {bulkCreated.result.created} {bulkCreated.result.created === 1 ? 'job' : 'jobs'}
          {bulkCreated.result.existing > 0 && ` (${bulkCreated.result.existing} already existed with their keys)`}:{' '}
          <Link to={`/jobs?type=${encodeURIComponent(bulkCreated.type)}`}>see {bulkCreated.type} jobs</Link>
        </div>
      )}
      {created && (
        <div className="notice" role="status">
          {created.created
            ? 'Job created: '
            : created.matched === 'unique_key'
              ? 'A job with this unique key is already queued or running: '
              : 'A job with this idempotency key already exists: '}
          <Link to={`/jobs/${created.job.id}`} data-testid="created-job-link">
            open job <span className="mono">{created.job.id.slice(0, 8)}</span>
          </Link>
        </div>
      )}

      <div className="form__grid">
        <FormField id="job-type" label="Type" errors={errorsFor('type')} hint={selectedType?.description}>
          {(p) => (
            <select {...p} value={values.type} onChange={(e) => onTypeChange(e.target.value)}>
              {config.job_types.map((t) => (
                <option key={t.type} value={t.type}>
                  {t.type}
                </option>
              ))}
            </select>
          )}
        </FormField>

        <NumberField
          id="job-priority"
          label="Priority"
          errors={errorsFor('priority')}
          hint={`Higher runs first. ${config.limits.priority_min} to ${config.limits.priority_max}.`}
          min={config.limits.priority_min}
          max={config.limits.priority_max}
          value={values.priority}
          onChange={(v) => set('priority', v)}
        />

        <NumberField
          id="job-max-attempts"
          label="Max attempts"
          errors={errorsFor('max_attempts')}
          hint={`1 to ${config.limits.max_attempts_max}; retries back off from ${config.worker.backoff_base_seconds}s.`}
          min={1}
          max={config.limits.max_attempts_max}
          value={values.maxAttempts}
          onChange={(v) => set('maxAttempts', v)}
        />

        <FormField
          id="job-idempotency-key"
          label="Idempotency key (optional)"
          errors={errorsFor('idempotency_key')}
          hint="Sending the same key again returns the existing job."
        >
          {(p) => (
            <input
              {...p}
              type="text"
              maxLength={config.limits.idempotency_key_max_length}
              value={values.idempotencyKey}
              onChange={(e) => set('idempotencyKey', e.target.value)}
            />
          )}
        </FormField>

        <KeyField
          id="job-unique-key"
          label="Unique key (optional)"
          errors={errorsFor('unique_key')}
          hint="While a job with this key is queued or running, creating another returns it."
          maxLength={KEY_MAX_LENGTH}
          value={values.uniqueKey}
          onChange={(v) => set('uniqueKey', v)}
        />

        <KeyField
          id="job-concurrency-key"
          label="Concurrency key (optional)"
          errors={errorsFor('concurrency_key')}
          hint="Jobs sharing a key run at most as many at once as its configured limit."
          maxLength={KEY_MAX_LENGTH}
          value={values.concurrencyKey}
          onChange={(v) => set('concurrencyKey', v)}
        />

        <KeyField
          id="job-queue"
          label="Queue (optional)"
          errors={errorsFor('queue')}
          hint={`Letters, digits and . _ : - (up to ${config.limits.queue_name_max_length}). Blank: the default queue.`}
          maxLength={config.limits.queue_name_max_length}
          suggestions={knownQueues}
          value={values.queue}
          onChange={(v) => set('queue', v)}
        />

        <NumberField
          id="job-timeout"
          label="Timeout in seconds (optional)"
          errors={errorsFor('timeout_seconds')}
          hint={`1 to ${config.limits.timeout_seconds_max}. Blank: the job type’s default, else the worker’s (${workerTimeout}).`}
          min={1}
          max={config.limits.timeout_seconds_max}
          value={values.timeoutSeconds}
          onChange={(v) => set('timeoutSeconds', v)}
        />
      </div>

      <fieldset className="fieldset">
        <legend>When to run</legend>
        <div className="radio-row">
          {(
            [
              ['now', 'Now'],
              ['delay', 'After a delay'],
              ['at', 'At a time'],
            ] as [Schedule, string][]
          ).map(([value, label]) => (
            <label key={value} className="radio">
              <input
                type="radio"
                name="schedule"
                value={value}
                checked={values.schedule === value}
                onChange={() => {
                  set('schedule', value);
                  if (value === 'at' && values.availableAt === '')
                    set('availableAt', toDateTimeLocal(new Date(Date.now() + 60_000)));
                }}
              />
              {label}
            </label>
          ))}
        </div>
        {values.schedule === 'delay' && (
          <FormField id="job-delay" label="Delay in seconds" errors={errorsFor('available_at')}>
            {(p) => (
              <input
                {...p}
                type="number"
                min={0}
                step="any"
                value={values.delaySeconds}
                onChange={(e) => set('delaySeconds', e.target.value)}
              />
            )}
          </FormField>
        )}
        {values.schedule === 'at' && (
          <FormField id="job-available-at" label="Available at (local time)" errors={errorsFor('available_at')}>
            {(p) => (
              <input
                {...p}
                type="datetime-local"
                value={values.availableAt}
                onChange={(e) => set('availableAt', e.target.value)}
              />
            )}
          </FormField>
        )}
        {values.schedule === 'now' && errorsFor('available_at').length > 0 && (
          <ul className="field__errors">
            {errorsFor('available_at').map((m) => (
              <li key={m}>{m}</li>
            ))}
          </ul>
        )}
      </fieldset>

      <JsonEditor
        id="job-payload"
        label="Payload"
        value={values.payload}
        maxBytes={config.limits.max_body_bytes}
        serverErrors={server.fields.payload ?? []}
        rows={8}
        onChange={(text) => {
          setPayloadEdited(true);
          set('payload', text);
        }}
      />

      <div className="actions">
        <NumberField
          id="job-count"
          label="How many"
          errors={countError ? [countError] : []}
          hint={`1 to ${bulkMax} copies of this job, in one request; a key gets -1, -2, … per copy.`}
          min={1}
          max={bulkMax}
          className="input--short"
          value={count}
          onChange={setCount}
        />
        <button type="submit" className="button button--primary" disabled={pending}>
          {pending ? 'Creating…' : count.trim() === '1' || count.trim() === '' ? 'Create job' : `Create ${count.trim()} jobs`}
        </button>
      </div>
    </form>
  );
}

function DemoSection({ config }: { config: ApiConfig }) {
  const [pendingType, setPendingType] = useState<string | null>(null);
  const [launched, setLaunched] = useState<LaunchedJob[]>([]);
  const [error, setError] = useState<string | null>(null);
  const create = useCreateJob();
  const demos = config.job_types.filter((t) => t.type.startsWith('demo.'));
  if (demos.length === 0) return null;

  function launch(t: JobTypeInfo) {
    setPendingType(t.type);
    setError(null);
    create.mutate(
      { type: t.type, payload: t.example_payload },
      {
        onSuccess: ({ job }) => setLaunched((prev) => [{ job, at: Date.now() }, ...prev].slice(0, 8)),
        onError: (err) => setError(`Could not enqueue ${t.type}: ${errorMessage(err)}`),
        onSettled: () => setPendingType(null),
      },
    );
  }

  return (
    <section className="panel" aria-labelledby="demo-heading">
      <h2 id="demo-heading">Demo jobs</h2>
      <p className="muted">
        One click enqueues a job with its example payload and the default of {config.worker.max_attempts_default}{' '}
        attempts. Lease: {config.worker.lease_seconds}s; backoff {config.worker.backoff_base_seconds}s doubling to{' '}
        {config.worker.backoff_max_seconds}s.
      </p>
      <DemoLauncher types={demos} pendingType={pendingType} launched={launched} error={error} onLaunch={launch} />
    </section>
  );
}

export function CreateJobPage() {
  const config = useConfig();
  return (
    <div className="page">
      <h1 id="create-heading">Create a job</h1>
      {config.isPending ? (
        <Loading label="Loading job types…" />
      ) : config.isError ? (
        <ErrorState title="Could not load the job types" error={config.error} onRetry={() => void config.refetch()} />
      ) : (
        <>
          <DemoSection config={config.data} />
          <section className="panel" aria-label="New job">
            <CreateForm config={config.data} />
          </section>
        </>
      )}
      <p className="muted small">
        API: <code>{api.baseUrl}</code>
      </p>
    </div>
  );
}
