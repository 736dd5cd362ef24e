import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { API, JOB_ID, makeJob, makeQueue } from '../test/fixtures';
import { makeEvent } from '../test/fixtures';
import { server, timelineResponse } from '../test/server';
import {
  ApiError,
  api,
  buildUrl,
  createApiClient,
  cursorFromLink,
  describeErrorBody,
  extractFieldErrors,
  linkTarget,
  readCookie,
} from './client';

describe('buildUrl', () => {
  it('joins base and path and drops empty query values', () => {
    expect(buildUrl('http://h/api/', '/jobs/', { status: 'failed', type: '', limit: 25, offset: 0, x: undefined })).toBe(
      'http://h/api/jobs/?status=failed&limit=25&offset=0',
    );
  });
});

describe('cursorFromLink', () => {
  it('extracts the cursor from a DRF link', () => {
    expect(cursorFromLink('http://localhost:8000/api/job-events/?cursor=cD05NzM%3D&limit=50')).toBe('cD05NzM=');
    expect(cursorFromLink(null)).toBeNull();
    expect(cursorFromLink('http://h/api/job-events/?limit=50')).toBeNull();
    expect(cursorFromLink('not a url')).toBeNull();
  });
});

describe('linkTarget', () => {
  it('finds a relation among the links of an RFC 8288 Link header', () => {
    const header = '<http://h/api/jobs/1/events/?cursor=n>; rel="next", <http://h/api/jobs/1/events/?cursor=p>; rel="prev"';
    expect(linkTarget(header, 'next')).toBe('http://h/api/jobs/1/events/?cursor=n');
    expect(linkTarget(header, 'prev')).toBe('http://h/api/jobs/1/events/?cursor=p');
    expect(linkTarget(header, 'last')).toBeNull();
    expect(linkTarget(null, 'next')).toBeNull();
  });

  it('reads unquoted, upper-case and several relations per link', () => {
    expect(linkTarget('<u1>; title="a, b"; rel=NEXT', 'next')).toBe('u1');
    expect(linkTarget('<u2>; rel="prev first"', 'first')).toBe('u2');
  });
});

describe('error bodies', () => {
  it('normalises DRF field errors, including nested ones', () => {
    expect(
      extractFieldErrors({ priority: ['Too big.'], payload: { sleep_seconds: ['Must be a number.'] }, detail: 'No.' }),
    ).toEqual({ priority: ['Too big.'], payload: ['sleep_seconds: Must be a number.'], detail: ['No.'] });
    expect(extractFieldErrors('oops')).toEqual({});
  });

  it('prefers detail, then non_field_errors, then the first field', () => {
    expect(describeErrorBody({ detail: 'Not found.' }, 'x')).toBe('Not found.');
    expect(describeErrorBody({ non_field_errors: ['Bad combo.'] }, 'x')).toBe('Bad combo.');
    expect(describeErrorBody({ priority: ['Too big.'] }, 'x')).toBe('priority: Too big.');
    expect(describeErrorBody(null, 'fallback')).toBe('fallback');
  });
});

describe('api client', () => {
  it('sends list filters as query parameters', async () => {
    let seen: URLSearchParams | null = null;
    server.use(
      http.get(`${API}/jobs/`, ({ request }) => {
        seen = new URL(request.url).searchParams;
        return HttpResponse.json({ count: 0, next: null, previous: null, results: [] });
      }),
    );
    await api.listJobs({ status: 'failed', type: ' demo ', queue: ' emails ', limit: 10, offset: 20 });
    expect(Object.fromEntries(seen!)).toEqual({
      status: 'failed',
      type: 'demo',
      queue: 'emails',
      limit: '10',
      offset: '20',
    });
  });

  it('tells a cancelled job (200) from a cancel request on a running one (202)', async () => {
    let code = 200;
    server.use(
      http.post(`${API}/jobs/${JOB_ID}/cancel/`, () =>
        HttpResponse.json(makeJob({ status: code === 200 ? 'cancelled' : 'running' }), { status: code }),
      ),
    );
    expect(await api.cancelJob(JOB_ID)).toMatchObject({ requested: false, job: { status: 'cancelled' } });
    code = 202;
    expect(await api.cancelJob(JOB_ID)).toMatchObject({ requested: true, job: { status: 'running' } });
  });

  it('posts the selection of a bulk action as its JSON body', async () => {
    const bodies: unknown[] = [];
    server.use(
      http.post(`${API}/jobs/cancel/`, async ({ request }) => {
        bodies.push(await request.json());
        return HttpResponse.json({ cancelled: 2, cancel_requested: 1 });
      }),
      http.post(`${API}/jobs/retry/`, async ({ request }) => {
        bodies.push(await request.json());
        return HttpResponse.json({ retried: 4 });
      }),
    );
    expect(await api.bulkCancel({ queue: 'emails', type: 'demo' })).toEqual({ cancelled: 2, cancel_requested: 1 });
    expect(await api.bulkRetry({ ids: [JOB_ID] })).toEqual({ retried: 4 });
    expect(bodies).toEqual([{ queue: 'emails', type: 'demo' }, { ids: [JOB_ID] }]);
  });

  it('surfaces the 400 the API gives an empty bulk selection', async () => {
    const detail = 'Give ids or at least one filter (status, type, queue): an empty selection would act on every job.';
    server.use(http.post(`${API}/jobs/retry/`, () => HttpResponse.json({ non_field_errors: [detail] }, { status: 400 })));
    await expect(api.bulkRetry({})).rejects.toMatchObject({ status: 400, message: detail });
  });

  it('reports 201 as created and 200 as an idempotent hit', async () => {
    let calls = 0;
    server.use(
      http.post(`${API}/jobs/`, async ({ request }) => {
        calls += 1;
        const body = (await request.json()) as { type: string };
        return HttpResponse.json(makeJob({ type: body.type }), { status: calls === 1 ? 201 : 200 });
      }),
    );
    const first = await api.createJob({ type: 'demo.fail', idempotency_key: 'k' });
    const second = await api.createJob({ type: 'demo.fail', idempotency_key: 'k' });
    expect(first).toMatchObject({ created: true, job: { type: 'demo.fail' } });
    expect(second.created).toBe(false);
  });

  it('names the rule that matched an existing job, and keeps it off the job', async () => {
    server.use(
      http.post(`${API}/jobs/`, () => HttpResponse.json({ ...makeJob(), matched: 'unique_key' }, { status: 200 })),
    );
    const outcome = await api.createJob({ type: 'demo.success', unique_key: 'k' });
    expect(outcome).toMatchObject({ created: false, matched: 'unique_key' });
    expect(outcome.job).not.toHaveProperty('matched');
  });

  it('sends the queue limits as a PATCH with the CSRF token, the name escaped', async () => {
    const seen: { method: string; path: string; csrf: string | null; body: unknown }[] = [];
    server.use(
      http.patch(`${API}/queues/:name/`, async ({ request }) => {
        seen.push({
          method: request.method,
          path: new URL(request.url).pathname,
          csrf: request.headers.get('x-csrftoken'),
          body: await request.json(),
        });
        return HttpResponse.json(makeQueue({ name: 'a:b', concurrency_limit: 2 }));
      }),
    );
    const client = createApiClient({ baseUrl: API, csrfToken: () => 'tok3n' });
    const queue = await client.updateQueueLimits('a:b', { concurrency_limit: 2, rate_limit: null });
    expect(queue.concurrency_limit).toBe(2);
    expect(seen).toEqual([
      { method: 'PATCH', path: '/api/queues/a%3Ab/', csrf: 'tok3n', body: { concurrency_limit: 2, rate_limit: null } },
    ]);
  });

  it('turns a 400 into an ApiError carrying field errors', async () => {
    server.use(http.post(`${API}/jobs/`, () => HttpResponse.json({ priority: ['Too big.'] }, { status: 400 })));
    const error = await api.createJob({ type: 'demo.success', priority: 99999 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ kind: 'http', status: 400, message: 'priority: Too big.', unreachable: false });
    expect((error as ApiError).fieldErrors).toEqual({ priority: ['Too big.'] });
  });

  it('surfaces the 409 detail when retrying a job that is not failed', async () => {
    server.use(
      http.post(`${API}/jobs/${JOB_ID}/retry/`, () =>
        HttpResponse.json(
          { detail: 'Only failed jobs can be retried; job is running.', status: 'running' },
          { status: 409 },
        ),
      ),
    );
    await expect(api.retryJob(JOB_ID)).rejects.toMatchObject({
      status: 409,
      message: 'Only failed jobs can be retried; job is running.',
    });
  });

  it('marks a connection failure as unreachable', async () => {
    server.use(http.get(`${API}/jobs/stats/`, () => HttpResponse.error()));
    await expect(api.getStats()).rejects.toMatchObject({ kind: 'network', status: 0, unreachable: true });
  });

  it('gives up after the timeout', async () => {
    const slow = createApiClient({ baseUrl: API, timeoutMs: 30 });
    server.use(
      http.get(`${API}/jobs/stats/`, async () => {
        await new Promise((r) => setTimeout(r, 200));
        return HttpResponse.json({});
      }),
    );
    await expect(slow.getStats()).rejects.toMatchObject({ kind: 'timeout', unreachable: true });
  });

  it('sends the CSRF token on writes only, and never an Authorization header', async () => {
    const seen: { method: string; csrf: string | null; auth: string | null }[] = [];
    const record = ({ request }: { request: Request }) => {
      seen.push({
        method: request.method,
        csrf: request.headers.get('x-csrftoken'),
        auth: request.headers.get('authorization'),
      });
    };
    server.use(
      http.get(`${API}/health/`, (info) => {
        record(info);
        return HttpResponse.json({ ok: true, database: 'ok' });
      }),
      http.post(`${API}/jobs/${JOB_ID}/retry/`, (info) => {
        record(info);
        return HttpResponse.json(makeJob());
      }),
    );
    const client = createApiClient({ baseUrl: API, csrfToken: () => 'tok3n' });
    await client.getHealth();
    await client.retryJob(JOB_ID);
    expect(seen).toEqual([
      { method: 'GET', csrf: null, auth: null },
      { method: 'POST', csrf: 'tok3n', auth: null },
    ]);
  });

  it('reads the CSRF token from the csrftoken cookie', () => {
    expect(readCookie('csrftoken', 'sessionid=x; csrftoken=a%2Fb; other=1')).toBe('a/b');
    expect(readCookie('csrftoken', 'sessionid=x')).toBeNull();
  });

  it('resolves a relative base URL against the page origin', () => {
    expect(buildUrl('/api', 'jobs/', { limit: 5 })).toBe(`${window.location.origin}/api/jobs/?limit=5`);
  });

  it('pages through a job timeline with the cursor', async () => {
    let seen: URLSearchParams | null = null;
    server.use(
      http.get(`${API}/jobs/${JOB_ID}/events/`, ({ request }) => {
        seen = new URL(request.url).searchParams;
        return timelineResponse([]);
      }),
    );
    await api.getJobEvents(JOB_ID, { cursor: 'c1', limit: 100 });
    expect(Object.fromEntries(seen!)).toEqual({ cursor: 'c1', limit: '100' });
  });

  it("reads a timeline's events from the array and its next page from the Link header", async () => {
    const next = `${API}/jobs/${JOB_ID}/events/?cursor=cD0y`;
    const events = [makeEvent(), makeEvent({ id: 2, type: 'claimed', attempt: 1 })];
    server.use(http.get(`${API}/jobs/${JOB_ID}/events/`, () => timelineResponse(events, { next })));
    expect(await api.getJobEvents(JOB_ID)).toEqual({ events, next });
  });

  it('ends a timeline whose response has no Link header', async () => {
    server.use(http.get(`${API}/jobs/${JOB_ID}/events/`, () => timelineResponse([makeEvent()])));
    expect((await api.getJobEvents(JOB_ID)).next).toBeNull();
  });

  it('passes cursor, limit and filters to the event feed', async () => {
    let seen: URLSearchParams | null = null;
    server.use(
      http.get(`${API}/job-events/`, ({ request }) => {
        seen = new URL(request.url).searchParams;
        return HttpResponse.json({ next: null, previous: null, results: [] });
      }),
    );
    await api.listEvents({ cursor: 'abc', limit: 10, type: 'failed', jobId: JOB_ID });
    expect(Object.fromEntries(seen!)).toEqual({ cursor: 'abc', limit: '10', type: 'failed', job_id: JOB_ID });
  });
});
