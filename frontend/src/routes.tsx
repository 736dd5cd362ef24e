import type { RouteObject } from 'react-router';
import { Layout } from './components/Layout';
import { CreateJobPage } from './pages/CreateJobPage';
import { EventsPage } from './pages/EventsPage';
import { JobDetailPage } from './pages/JobDetailPage';
import { JobsPage } from './pages/JobsPage';
import { JobTypesPage } from './pages/JobTypesPage';
import { NotFoundPage } from './pages/NotFoundPage';
import { OverviewPage } from './pages/OverviewPage';
import { QueuesPage } from './pages/QueuesPage';
import { SchedulesPage } from './pages/SchedulesPage';
import { WorkersPage } from './pages/WorkersPage';
import { WorkflowDetailPage } from './pages/WorkflowDetailPage';
import { WorkflowsPage } from './pages/WorkflowsPage';

export const routes: RouteObject[] = [
  {
    element: <Layout />,
    children: [
      { index: true, element: <OverviewPage /> },
      { path: 'jobs', element: <JobsPage /> },
      { path: 'jobs/:id', element: <JobDetailPage /> },
      { path: 'job-types', element: <JobTypesPage /> },
      { path: 'workflows', element: <WorkflowsPage /> },
      { path: 'workflows/:id', element: <WorkflowDetailPage /> },
      { path: 'workers', element: <WorkersPage /> },
      { path: 'queues', element: <QueuesPage /> },
      { path: 'schedules', element: <SchedulesPage /> },
      { path: 'events', element: <EventsPage /> },
      { path: 'create', element: <CreateJobPage /> },
      { path: '*', element: <NotFoundPage /> },
    ],
  },
];
