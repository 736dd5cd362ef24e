/**
 * Workflows on real data: created through POST /api/workflows/, run by the worker run-e2e.sh
 * started, then listed, drawn and followed to their jobs. Run by run-e2e.sh in its first
 * phase, against the same API, worker and database.
 */
import { expect, test, type APIRequestContext, type Locator, type Page } from '@playwright/test';
import { API, screenshotPath } from './support';

test.describe.configure({ mode: 'serial' });

interface Workflow {
  id: string;
  name: string;
  state: string;
  members: { id: string; ref: string; status: string }[];
  edges: { parent: string; child: string }[];
}

async function createWorkflow(request: APIRequestContext, body: object): Promise<Workflow> {
  const res = await request.post(`${API}/workflows/`, { data: body });
  expect(res.status(), await res.text()).toBe(201);
  return (await res.json()) as Workflow;
}

async function workflowState(request: APIRequestContext, id: string): Promise<string> {
  const res = await request.get(`${API}/workflows/${id}/`);
  return ((await res.json()) as Workflow).state;
}

/** The id of the member created as `ref`. */
function member(workflow: Workflow, ref: string): string {
  const found = workflow.members.find((m) => m.ref === ref);
  expect(found, `member ${ref}`).toBeDefined();
  return found!.id;
}

const graphOf = (scope: Page | Locator) => scope.getByRole('group', { name: 'Workflow graph' });
const node = (graph: Locator, id: string) => graph.locator(`[data-node-id="${id}"]`);
const edge = (graph: Locator, from: string, to: string) =>
  graph.locator(`[data-edge-from="${from}"][data-edge-to="${to}"]`);

async function expectNoSidewaysScroll(page: Page, label: string) {
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow, `horizontal page overflow on ${label}`).toBeLessThanOrEqual(0);
}

test('a chain a -> b -> c: listed with its state, drawn with its edges, and each job one click from the graph', async ({
  page,
  request,
}) => {
  const name = `e2e-chain-${Date.now()}`;
  const workflow = await createWorkflow(request, {
    name,
    jobs: [
      { ref: 'extract', type: 'demo.success', payload: { sleep_seconds: 0.2 } },
      { ref: 'transform', type: 'demo.success', payload: { sleep_seconds: 0.2 }, depends_on: ['extract'] },
      { ref: 'load', type: 'demo.success', payload: { sleep_seconds: 0.2 }, depends_on: ['transform'] },
    ],
  });
  const [extract, transform, load] = ['extract', 'transform', 'load'].map((ref) => member(workflow, ref)) as [
    string,
    string,
    string,
  ];

  // Opened while it runs: the list follows it to its end by polling.
  await page.goto('/');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Workflows' }).click();
  await expect(page).toHaveTitle('Workflows · Job Queue');
  await expect(page.getByRole('heading', { level: 1, name: 'Workflows' })).toBeFocused();
  const row = page.locator(`tr[data-workflow-id="${workflow.id}"]`);
  await expect(row.getByRole('link', { name })).toBeVisible();
  await expect(row.locator('[data-state]')).toHaveAttribute('data-state', 'succeeded', { timeout: 30_000 });
  await expect(row).toContainText('3 succeeded');
  await expect(row.getByRole('img', { name: '3 jobs: 3 succeeded' })).toBeVisible();

  // The state filter is in the URL: another state hides it, Back brings it back.
  await page.getByLabel('State').selectOption('failed');
  await expect(page).toHaveURL(/\/workflows\?state=failed$/);
  await expect(row).toHaveCount(0);
  await page.goBack();
  await expect(page).toHaveURL(/\/workflows$/);
  await expect(row).toBeVisible();

  await row.getByRole('link', { name }).click();
  await expect(page).toHaveURL(new RegExp(`/workflows/${workflow.id}$`));
  await expect(page).toHaveTitle(`Workflow ${workflow.id.slice(0, 8)} · Job Queue`);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(`Workflow ${name}`);
  const graph = graphOf(page);
  for (const id of [extract, transform, load]) {
    await expect(node(graph, id)).toHaveAttribute('data-status', 'succeeded');
    await expect(node(graph, id)).toHaveAttribute('href', `/jobs/${id}`);
  }
  await expect(node(graph, transform)).toContainText('transform');
  await expect(node(graph, transform)).toContainText('demo.success · succeeded');
  await expect(edge(graph, extract, transform)).toHaveCount(1);
  await expect(edge(graph, transform, load)).toHaveCount(1);
  await expect(graph.locator('[data-edge-from]')).toHaveCount(2);
  // One step per layer, left to right.
  const xs = await Promise.all([extract, transform, load].map(async (id) => (await node(graph, id).boundingBox())!.x));
  expect(xs).toEqual([...xs].sort((a, b) => a - b));
  expect(new Set(xs).size).toBe(3);
  await page.screenshot({ path: screenshotPath('workflow.png'), fullPage: true });

  await graph.getByRole('link', { name: /^transform/ }).click();
  await expect(page).toHaveURL(new RegExp(`/jobs/${transform}$`));
  const section = page.getByRole('region', { name: 'Workflow' });
  await expect(section.getByRole('link', { name })).toHaveAttribute('href', `/workflows/${workflow.id}`);
  const here = graphOf(section).locator('[aria-current="page"]');
  await expect(here).toHaveAttribute('data-node-id', transform);
  await expect(here).toContainText('this job');
  await expect(graphOf(section).locator('[data-current]')).toHaveCount(1);
  await expect(edge(graphOf(section), extract, transform)).toHaveCount(1);
  await expect(edge(graphOf(section), transform, load)).toHaveCount(1);
  await page.screenshot({ path: screenshotPath('job-in-workflow.png'), fullPage: true });
});

test('a group with a callback: the group drawn as one node with counts, the failed member apart on its own page', async ({
  page,
  request,
}) => {
  const size = 14; // more than a layer shows job by job (12)
  const items = Array.from({ length: size }, (_, i) => `item-${i}`);
  const name = `e2e-group-${Date.now()}`;
  const workflow = await createWorkflow(request, {
    name,
    jobs: [
      { ref: 'start', type: 'demo.success', payload: { sleep_seconds: 0.1 } },
      ...items.map((ref, i) =>
        i === 0
          ? { ref, type: 'demo.fail', max_attempts: 1, depends_on: ['start'] }
          : { ref, type: 'demo.success', payload: { sleep_seconds: 0.1 }, depends_on: ['start'] },
      ),
      // The callback runs whatever its parents' outcomes.
      { ref: 'report', type: 'demo.success', payload: { sleep_seconds: 0.1 }, depends_on: items, on_parent_failure: 'run' },
    ],
  });
  const [start, failed, report] = ['start', 'item-0', 'report'].map((ref) => member(workflow, ref)) as [
    string,
    string,
    string,
  ];
  await expect.poll(() => workflowState(request, workflow.id), { timeout: 60_000 }).toBe('failed');

  await page.goto('/workflows?state=failed');
  const row = page.locator(`tr[data-workflow-id="${workflow.id}"]`);
  await expect(row.locator('[data-state]')).toHaveAttribute('data-state', 'failed');
  await expect(row).toContainText(`${size + 1} succeeded · 1 failed`);
  await expect(row.locator('td.num')).toHaveText(String(size + 2));
  await page.screenshot({ path: screenshotPath('workflows.png'), fullPage: true });

  await row.getByRole('link', { name }).click();
  const graph = graphOf(page);
  const group = node(graph, 'layer-1');
  await expect(group).toHaveAttribute('data-group-size', String(size));
  await expect(group).toContainText(`${size} jobs: ${size - 1} succeeded · 1 failed`);
  await expect(node(graph, start)).toHaveAttribute('data-status', 'succeeded');
  await expect(node(graph, report)).toHaveAttribute('data-status', 'succeeded');
  await expect(edge(graph, start, 'layer-1')).toHaveAttribute('data-edge-count', String(size));
  await expect(edge(graph, 'layer-1', report)).toHaveAttribute('data-edge-count', String(size));
  await expect(graph.getByRole('link')).toHaveCount(2);
  await page.screenshot({ path: screenshotPath('workflow-group.png'), fullPage: true });

  // The failed member's page: itself drawn apart from the other 13, outlined.
  await page.goto(`/jobs/${failed}`);
  const section = page.getByRole('region', { name: 'Workflow' });
  const here = graphOf(section).locator('[aria-current="page"]');
  await expect(here).toHaveAttribute('data-node-id', failed);
  await expect(here).toHaveAttribute('data-status', 'failed');
  await expect(node(graphOf(section), 'layer-1')).toHaveAttribute('data-group-size', String(size - 1));
  await expect(edge(graphOf(section), start, failed)).toHaveCount(1);
  await expect(edge(graphOf(section), failed, report)).toHaveCount(1);
});

test.describe('an 800 px window', () => {
  test.use({ viewport: { width: 800, height: 800 } });

  test('the Workflows list, a workflow and a job in one never scroll the page sideways', async ({ page, request }) => {
    const workflow = await createWorkflow(request, {
      name: `e2e-wide-${Date.now()}`,
      jobs: Array.from({ length: 6 }, (_, i) => ({
        ref: `step-${i}`,
        type: 'demo.success',
        payload: { sleep_seconds: 0.1 },
        ...(i > 0 && { depends_on: [`step-${i - 1}`] }),
      })),
    });
    await page.goto('/workflows');
    await expect(page.locator(`tr[data-workflow-id="${workflow.id}"]`)).toBeVisible();
    await expectNoSidewaysScroll(page, '/workflows');

    await page.goto(`/workflows/${workflow.id}`);
    const graph = graphOf(page);
    await expect(graph.locator('[data-node-id]')).toHaveCount(6);
    await expectNoSidewaysScroll(page, 'a workflow of six steps');
    // Six steps are wider than the window: the graph scrolls inside its box, by keyboard too.
    const scroll = await graph.evaluate((el) => el.scrollWidth - el.clientWidth);
    expect(scroll).toBeGreaterThan(0);
    await graph.focus();
    await page.keyboard.press('ArrowRight');
    await expect.poll(() => graph.evaluate((el) => el.scrollLeft)).toBeGreaterThan(0);

    await page.goto(`/jobs/${member(workflow, 'step-5')}`);
    await expect(graphOf(page).locator('[aria-current="page"]')).toBeVisible();
    await expectNoSidewaysScroll(page, 'a job of the workflow');
  });
});
