/** What the workflow pages share: the list's paging and filter, and a workflow's name. */
import { WORKFLOW_STATES, type WorkflowState, type WorkflowSummary } from '../api/types';

/** The API's fixed page size for workflows: the pager counts pages of it from `page`. */
export const WORKFLOW_PAGE_SIZE = 50;

export function parseWorkflowState(raw: string | null): WorkflowState | undefined {
  return WORKFLOW_STATES.find((s) => s === raw);
}

/** A workflow's name, else its short id: what lists, headings and links call it. */
export function workflowTitle(workflow: Pick<WorkflowSummary, 'id' | 'name'>): string {
  return workflow.name || workflow.id.slice(0, 8);
}
