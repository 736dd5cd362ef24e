import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import type { JobCreateInput } from '../api/types';
import { API, config, makeJob } from '../test/fixtures';
import { renderApp } from '../test/render';
import { server } from '../test/server';

function capturePosts(respond: (body: JobCreateInput) => Response) {
  const bodies: JobCreateInput[] = [];
  server.use(
    http.post(`${API}/jobs/`, async ({ request }) => {
      const body = (await request.json()) as JobCreateInput;
      bodies.push(body);
      return respond(body);
    }),
  );
  return bodies;
}

describe('Create page', () => {
  it('builds the form from /config/ and follows the chosen type’s example payload', async () => {
    renderApp('/create');
    const type = await screen.findByLabelText('Type');
    expect(within(type).getAllByRole('option').map((o) => o.textContent)).toEqual([
      'demo.success',
      'demo.fail',
      'demo.flaky',
    ]);
    expect(screen.getByLabelText('Max attempts')).toHaveValue(3);
    await userEvent.selectOptions(type, 'demo.flaky');
    expect(JSON.parse((screen.getByLabelText('Payload') as HTMLTextAreaElement).value)).toEqual({
      fail_until_attempt: 2,
    });
  });

  it('posts the form and links to the new job', async () => {
    const bodies = capturePosts((b) => HttpResponse.json(makeJob({ type: b.type }), { status: 201 }));
    renderApp('/create');
    await userEvent.selectOptions(await screen.findByLabelText('Type'), 'demo.fail');
    const attempts = screen.getByLabelText('Max attempts');
    await userEvent.clear(attempts);
    await userEvent.type(attempts, '1');
    await userEvent.type(screen.getByLabelText('Idempotency key (optional)'), 'abc');
    await userEvent.type(screen.getByLabelText('Queue (optional)'), 'emails');
    await userEvent.type(screen.getByLabelText('Timeout in seconds (optional)'), '30');
    await userEvent.click(screen.getByRole('button', { name: 'Create job' }));

    const link = await screen.findByTestId('created-job-link');
    expect(link).toHaveAttribute('href', `/jobs/${makeJob().id}`);
    expect(screen.getByRole('status')).toHaveTextContent('Job created');
    expect(bodies).toEqual([
      {
        type: 'demo.fail',
        payload: { error: 'Intentional demo failure' },
        priority: 50,
        available_at: null,
        max_attempts: 1,
        idempotency_key: 'abc',
        queue: 'emails',
        timeout_seconds: 30,
      },
    ]);
  });

  it('sends the unique and concurrency keys when set', async () => {
    const bodies = capturePosts((b) => HttpResponse.json(makeJob({ type: b.type }), { status: 201 }));
    renderApp('/create');
    await userEvent.type(await screen.findByLabelText('Unique key (optional)'), ' rebuild-index ');
    await userEvent.type(screen.getByLabelText('Concurrency key (optional)'), 'customer:42');
    await userEvent.click(screen.getByRole('button', { name: 'Create job' }));
    await screen.findByTestId('created-job-link');
    expect(bodies).toHaveLength(1);
    expect(bodies[0]).toMatchObject({ unique_key: 'rebuild-index', concurrency_key: 'customer:42' });
  });

  it('says so when the unique key returned the job still queued or running', async () => {
    capturePosts(() => HttpResponse.json({ ...makeJob({ unique_key: 'rebuild-index' }), matched: 'unique_key' }, { status: 200 }));
    renderApp('/create');
    await userEvent.type(await screen.findByLabelText('Unique key (optional)'), 'rebuild-index');
    await userEvent.click(screen.getByRole('button', { name: 'Create job' }));
    expect(await screen.findByRole('status')).toHaveTextContent(
      'A job with this unique key is already queued or running: open job',
    );
  });

  it('shows the API’s unique key error next to the field', async () => {
    capturePosts(() => HttpResponse.json({ unique_key: ['Ensure this field has no more than 255 characters.'] }, { status: 400 }));
    renderApp('/create');
    await userEvent.type(await screen.findByLabelText('Unique key (optional)'), 'k');
    await userEvent.click(screen.getByRole('button', { name: 'Create job' }));
    await waitFor(() =>
      expect(screen.getByLabelText('Unique key (optional)')).toHaveAccessibleDescription(/no more than 255 characters/),
    );
  });

  it('says so when the idempotency key returned an existing job', async () => {
    capturePosts(() => HttpResponse.json(makeJob(), { status: 200 }));
    renderApp('/create');
    await userEvent.click(await screen.findByRole('button', { name: 'Create job' }));
    expect(await screen.findByRole('status')).toHaveTextContent('already exists');
  });

  it('shows API field errors next to their fields and general errors on top', async () => {
    capturePosts(() =>
      HttpResponse.json(
        { priority: ['Ensure this value is less than or equal to 100.'], non_field_errors: ['Try again.'] },
        { status: 400 },
      ),
    );
    renderApp('/create');
    await userEvent.click(await screen.findByRole('button', { name: 'Create job' }));
    const priority = screen.getByLabelText('Priority');
    await waitFor(() => expect(priority).toHaveAttribute('aria-invalid', 'true'));
    const describedBy = priority.getAttribute('aria-describedby')!.split(' ');
    const errorList = document.getElementById(describedBy[0]!);
    expect(errorList).toHaveTextContent('Ensure this value is less than or equal to 100.');
    expect(screen.getByRole('alert')).toHaveTextContent('Try again.');
  });

  it('checks the queue name and the timeout against /config/ before sending', async () => {
    server.use(
      http.get(`${API}/config/`, () =>
        HttpResponse.json({ ...config, limits: { ...config.limits, timeout_seconds_max: 600 } }),
      ),
    );
    const bodies = capturePosts(() => HttpResponse.json(makeJob(), { status: 201 }));
    renderApp('/create');
    const queue = await screen.findByLabelText('Queue (optional)');
    expect(queue).toHaveAttribute('maxLength', String(config.limits.queue_name_max_length));
    await userEvent.type(queue, 'bulk mail');
    const timeout = screen.getByLabelText('Timeout in seconds (optional)');
    expect(screen.getByText(/^1 to 600\. Blank: the job type’s default, else the worker’s \(no limit\)\.$/)).toBeInTheDocument();
    await userEvent.type(timeout, '601');
    await userEvent.click(screen.getByRole('button', { name: 'Create job' }));
    expect(queue).toHaveAttribute('aria-invalid', 'true');
    expect(queue).toHaveAccessibleDescription(/Letters, digits and \. _ : - only, starting with a letter or digit\./);
    expect(timeout).toHaveAccessibleDescription(/Timeout must be between 1 and 600 seconds\./);
    expect(bodies).toEqual([]);
  });

  it('shows the API’s queue error next to the field', async () => {
    capturePosts(() => HttpResponse.json({ queue: ['Ensure this field has no more than 64 characters.'] }, { status: 400 }));
    renderApp('/create');
    await userEvent.type(await screen.findByLabelText('Queue (optional)'), 'emails');
    await userEvent.click(screen.getByRole('button', { name: 'Create job' }));
    await waitFor(() =>
      expect(screen.getByLabelText('Queue (optional)')).toHaveAccessibleDescription(
        /Ensure this field has no more than 64 characters\./,
      ),
    );
  });

  it('does not send an invalid form', async () => {
    const bodies = capturePosts(() => HttpResponse.json(makeJob(), { status: 201 }));
    renderApp('/create');
    const payload = await screen.findByLabelText('Payload');
    await userEvent.clear(payload);
    await userEvent.type(payload, '[[1]');
    await userEvent.click(screen.getByRole('button', { name: 'Create job' }));
    expect(payload).toHaveAttribute('aria-invalid', 'true');
    expect(bodies).toEqual([]);
  });

  it('enqueues a demo job with one click', async () => {
    const bodies = capturePosts((b) => HttpResponse.json(makeJob({ type: b.type }), { status: 201 }));
    renderApp('/create');
    await userEvent.click(await screen.findByRole('button', { name: 'Enqueue demo.flaky' }));
    expect(await screen.findByRole('link', { name: /demo\.flaky/ })).toHaveAttribute('href', `/jobs/${makeJob().id}`);
    expect(bodies).toEqual([{ type: 'demo.flaky', payload: { fail_until_attempt: 2 } }]);
  });

  it('shows an error state when the job types cannot be loaded', async () => {
    server.use(http.get(`${API}/config/`, () => HttpResponse.error()));
    renderApp('/create');
    expect(await screen.findByText('Could not load the job types')).toBeInTheDocument();
  });

  it('creates many copies of the form in one bulk request and says how many', async () => {
    const bodies: { jobs: JobCreateInput[] }[] = [];
    server.use(
      http.post(`${API}/jobs/bulk/`, async ({ request }) => {
        const body = (await request.json()) as { jobs: JobCreateInput[] };
        bodies.push(body);
        return HttpResponse.json(
          { created: 2, existing: 1, jobs: body.jobs.map((_, i) => ({ id: `id-${i}`, created: i > 0 })) },
          { status: 201 },
        );
      }),
    );
    renderApp('/create');
    await userEvent.selectOptions(await screen.findByLabelText('Type'), 'demo.fail');
    await userEvent.type(screen.getByLabelText('Idempotency key (optional)'), 'batch');
    const count = screen.getByLabelText('How many');
    await userEvent.clear(count);
    await userEvent.type(count, '3');
    await userEvent.click(screen.getByRole('button', { name: 'Create 3 jobs' }));
    expect(await screen.findByRole('status')).toHaveTextContent('Created 2 jobs (1 already existed with their keys)');
    expect(screen.getByRole('link', { name: 'see demo.fail jobs' })).toHaveAttribute('href', '/jobs?type=demo.fail');
    expect(bodies).toHaveLength(1);
    expect(bodies[0]!.jobs.map((j) => [j.type, j.idempotency_key])).toEqual([
      ['demo.fail', 'batch-1'],
      ['demo.fail', 'batch-2'],
      ['demo.fail', 'batch-3'],
    ]);
  });

  it('refuses a count above the published maximum without sending anything', async () => {
    renderApp('/create');
    const count = await screen.findByLabelText('How many');
    await userEvent.clear(count);
    await userEvent.type(count, '1001');
    await userEvent.click(screen.getByRole('button', { name: 'Create 1001 jobs' }));
    expect(await screen.findByText('A whole number from 1 to 1000.')).toBeInTheDocument();
  });
});
