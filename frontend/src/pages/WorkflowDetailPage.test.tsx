import { screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import type { WorkflowDetail } from '../api/types';
import { API, WORKFLOW_ID, edge, makeJob, makeMember, makeWorkflow } from '../test/fixtures';
import { renderApp } from '../test/render';
import { server, timelineResponse } from '../test/server';

const extract = makeMember('extract');
const transform = makeMember('transform', { status: 'running', finished_at: null });
const load = makeMember('load', { type: 'demo.slow', status: 'waiting', attempts: 0, finished_at: null });
const CHAIN = makeWorkflow([extract, transform, load], [edge(extract, transform), edge(transform, load)], {
  state: 'active',
});

function serve(workflow: WorkflowDetail) {
  server.use(http.get(`${API}/workflows/${WORKFLOW_ID}/`, () => HttpResponse.json(workflow)));
}

const graph = () => screen.getByRole('group', { name: 'Workflow graph' });
const node = (id: string) => graph().querySelector(`[data-node-id="${id}"]`);
const edges = () =>
  [...graph().querySelectorAll('[data-edge-from]')].map((e) => [e.getAttribute('data-edge-from'), e.getAttribute('data-edge-to')]);

describe('Workflow page', () => {
  it('shows the name, state and counts, and the title names the workflow', async () => {
    serve(CHAIN);
    renderApp(`/workflows/${WORKFLOW_ID}`);
    expect(await screen.findByRole('heading', { level: 1 })).toHaveTextContent('Workflow nightly-etl');
    expect(screen.getByText('active', { selector: '[data-state]' })).toBeInTheDocument();
    const fields = screen.getByRole('region', { name: 'Fields' });
    expect(within(fields).getByText(WORKFLOW_ID)).toBeInTheDocument();
    expect(within(fields).getByRole('img', { name: '3 jobs: 1 succeeded · 1 running · 1 waiting' })).toBeInTheDocument();
    expect(document.title).toBe('Workflow 5c0ffee1 · Job Queue');
  });

  it('draws each job as a link to its page in its status, with its ref and type, and the edges between them', async () => {
    serve(CHAIN);
    renderApp(`/workflows/${WORKFLOW_ID}`);
    await screen.findByRole('group', { name: 'Workflow graph' });
    const links = within(graph()).getAllByRole('link');
    expect(links.map((l) => l.getAttribute('href'))).toEqual([extract, transform, load].map((m) => `/jobs/${m.id}`));
    expect(node(load.id)).toHaveAttribute('data-status', 'waiting');
    expect(node(load.id)).toHaveTextContent('load');
    expect(node(load.id)).toHaveTextContent('demo.slow · waiting');
    expect(node(load.id)).toHaveClass('dag-node--info');
    expect(node(transform.id)).toHaveClass('dag-node--running');
    // Read aloud, a job says what it waits for.
    expect(node(load.id)).toHaveAccessibleName(/load.*, waits for transform$/);
    expect(edges()).toEqual([
      [extract.id, transform.id],
      [transform.id, load.id],
    ]);
    expect(graph().querySelectorAll('[aria-current]')).toHaveLength(0);
  });

  it('opens the job page of a node clicked', async () => {
    serve(CHAIN);
    server.use(
      http.get(`${API}/jobs/${transform.id}/`, () => HttpResponse.json(makeJob({ id: transform.id, status: 'running' }))),
      http.get(`${API}/jobs/${transform.id}/events/`, () => timelineResponse([])),
    );
    const { router } = renderApp(`/workflows/${WORKFLOW_ID}`);
    await userEvent.click(await screen.findByRole('link', { name: /^transform/ }));
    expect(router.state.location.pathname).toBe(`/jobs/${transform.id}`);
  });

  it('shows a large group as one node with counts between its parent and its callback, and says members were left out', async () => {
    const start = makeMember('start');
    const group = Array.from({ length: 1_000 - 2 }, (_, i) =>
      makeMember(`item-${i}`, { status: i < 10 ? 'failed' : 'succeeded' }),
    );
    const callback = makeMember('callback', { status: 'waiting', on_parent_failure: 'run' });
    serve(
      makeWorkflow(
        [start, ...group, callback],
        [...group.map((g) => edge(start, g)), ...group.map((g) => edge(g, callback))],
        { jobs: 10_002, members_truncated: true, state: 'active' },
      ),
    );
    renderApp(`/workflows/${WORKFLOW_ID}`);
    await screen.findByRole('group', { name: 'Workflow graph' });
    expect(screen.getByText(/First 1,000 members shown, of 10,002/)).toBeInTheDocument();
    const collapsed = node('layer-1')!;
    expect(collapsed).toHaveAttribute('data-group-size', '998');
    expect(collapsed).toHaveTextContent('998 jobs: 988 succeeded · 10 failed');
    expect(within(graph()).getAllByRole('link')).toHaveLength(2);
    expect(edges()).toEqual([
      [start.id, 'layer-1'],
      ['layer-1', callback.id],
    ]);
  });

  it('says when no workflow has the id', async () => {
    server.use(http.get(`${API}/workflows/${WORKFLOW_ID}/`, () => HttpResponse.json({ detail: 'Not found.' }, { status: 404 })));
    renderApp(`/workflows/${WORKFLOW_ID}`);
    expect(await screen.findByRole('heading', { level: 1, name: 'Workflow not found' })).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Try again' })).not.toBeInTheDocument();
    expect(screen.getByRole('link', { name: '← All workflows' })).toHaveAttribute('href', '/workflows');
  });
});
