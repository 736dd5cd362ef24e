"""The statements that read the same on every database, run on Django's connection: the
health probe, and a request's authentication and permission check.

Both drivers take them as they are (``PortableStatements``). Who holds which of an app's
permissions, and the user and token of an API key with those permissions, are asked in
SQL written once per process: compiling the equivalent querysets cost more than running
them. Tables and columns are read from the user model's relations, so a custom user
model is asked the same question. The rules (inactive users, superusers, other
authentication backends) stay with the callers, ``jobs.permissions`` and
``jobs.api.throttling``. The dependency statements (``DependencyStatements``) are ORM
on both: none is on a hot path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, cast
from uuid import UUID

from django.contrib.auth import get_user_model
from django.db import DEFAULT_DB_ALIAS, connection
from django.db.models import Exists, F, Field, ForeignKey, Model, OuterRef, Q, QuerySet, Value
from django.db.models.expressions import Col
from django.db.models.fields.tuple_lookups import Tuple, TupleGreaterThan
from django.db.models.functions import Greatest

from ..models import (
    FINISHED_STATUSES,
    Job,
    JobDependency,
    JobEvent,
    JobEventType,
    JobStatus,
    OnParentFailure,
    Workflow,
)
from .base import JOB_ROW_FIELDS, JobRow


@dataclass(frozen=True, slots=True)
class TokenUser:
    """The user and the token of one key, as the ORM would read them (the token's ``user``
    filled), and the codenames of the app's permissions the user holds."""

    user: Any
    token: Any
    codenames: frozenset[str]


class PortableStatements:
    """The health probe and the two statements of a request's authentication and
    permission check."""

    def ping(self) -> None:
        """One round trip to the database; raises ``DatabaseError`` when it fails."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()

    def held_permissions(
        self, *, user_pk: Any, app_label: str, codenames: Sequence[str]
    ) -> frozenset[str]:
        """Which of ``codenames`` of ``app_label`` the user holds, directly or through a
        group (the rule ModelBackend applies), in one statement."""
        with connection.cursor() as cursor:
            cursor.execute(
                _held_permissions_sql(len(codenames)),
                [app_label, *codenames, user_pk, user_pk],
            )
            return frozenset(codename for (codename,) in cursor.fetchall())

    def token_user(self, token_model: type[Model], key: str, *, app_label: str) -> TokenUser | None:
        """The user and the token of ``key`` and the user's permissions of ``app_label``,
        in one statement (a row per permission held, or one); ``None`` for an unknown key.
        What DRF asks with ``Token.objects.select_related("user").get(key=key)``, whose
        compilation cost four times the statement's run (0.58 against 0.13 ms of CPU per
        authentication here)."""
        sql, converters, user_fields, token_fields = _token_user_sql(token_model)
        with connection.cursor() as cursor:
            cursor.execute(sql, [app_label, key])
            rows = cursor.fetchall()
        if not rows:
            return None
        values = list(rows[0])
        for index, column, convert in converters:
            values[index] = convert(values[index], column, connection)
        user = get_user_model().from_db(DEFAULT_DB_ALIAS, user_fields, values[: len(user_fields)])
        token: Any = token_model.from_db(DEFAULT_DB_ALIAS, token_fields, values[len(user_fields) :])
        token.user = user  # the relation DRF's select_related would have filled
        codenames = frozenset(row[-1] for row in rows if row[-1] is not None)
        return TokenUser(user=user, token=token, codenames=codenames)


@cache
def _held_permissions_join(user: str) -> str:
    """A ``LEFT JOIN`` giving one row per permission of an app that the user whose primary
    key is the column ``user`` holds, as ``p.codename`` (one row of NULL if none). Its one
    parameter is the app label."""
    from django.contrib.auth.models import Permission

    return f" LEFT JOIN {_table(Permission)} AS p ON {_in_app()} AND ({_held(user)})"


@cache
def _held_permissions_sql(count: int) -> str:
    """Which of ``count`` codenames of an app a user holds, directly or through a group
    (parameters: the app label, the codenames, the user's key twice)."""
    from django.contrib.auth.models import Permission

    codenames = ", ".join(["%s"] * count)
    return (
        f"SELECT p.codename FROM {_table(Permission)} AS p"
        f" WHERE {_in_app()} AND p.codename IN ({codenames}) AND ({_held('%s')})"
    )


@cache
def _token_user_sql(
    token_model: type[Model],
) -> tuple[str, list[tuple[int, Col, Any]], list[str], list[str]]:
    """``token_user``'s statement (parameters: the app label and the key), the converters
    its rows need to read as the ORM reads them (SQLite's booleans are integers and its
    datetimes text; PostgreSQL's need none), and the attribute names of the user's and the
    token's part (the permission's codename comes last)."""
    user_model = get_user_model()

    def quoted(field: Field[Any, Any]) -> str:
        return connection.ops.quote_name(cast(str, field.column))  # concrete: never None

    users = list(user_model._meta.concrete_fields)
    tokens = list(token_model._meta.concrete_fields)
    relation = cast("ForeignKey[Any, Any]", token_model._meta.get_field("user"))
    key = cast("Field[Any, Any]", token_model._meta.get_field("key"))
    user_pk = user_model._meta.pk
    selected = [f"u.{quoted(field)}" for field in users] + [f"t.{quoted(f)}" for f in tokens]
    sql = (
        f"SELECT {', '.join(selected)}, p.codename FROM {_table(token_model)} AS t"
        f" JOIN {_table(user_model)} AS u ON u.{quoted(user_pk)} = t.{quoted(relation)}"
        f"{_held_permissions_join(f'u.{quoted(user_pk)}')}"
        f" WHERE t.{quoted(key)} = %s"
    )
    # Every connection of the alias has this one's backend and settings.
    columns = [field.get_col("u") for field in users] + [field.get_col("t") for field in tokens]
    converters = [
        (index, column, convert)
        for index, column in enumerate(columns)
        for convert in connection.ops.get_db_converters(column)
        + column.get_db_converters(connection)
    ]
    return sql, converters, [field.attname for field in users], [f.attname for f in tokens]


def _table(model: Any) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _in_app() -> str:
    """The permission ``p`` belongs to the app named by the one parameter."""
    from django.contrib.contenttypes.models import ContentType

    return f"p.content_type_id IN (SELECT id FROM {_table(ContentType)} WHERE app_label = %s)"


def _held(user: str) -> str:
    """The user ``user`` (a parameter or a column) holds the permission ``p``, directly
    or through a group: the rule ModelBackend applies."""
    from django.contrib.auth.models import Group

    quote = connection.ops.quote_name
    user_model = get_user_model()

    def m2m(field: Any) -> tuple[str, str, str]:
        return (
            quote(field.m2m_db_table()),
            quote(field.m2m_column_name()),
            quote(field.m2m_reverse_name()),
        )

    up_table, up_user, up_permission = m2m(user_model._meta.get_field("user_permissions"))
    ug_table, ug_user, ug_group = m2m(user_model._meta.get_field("groups"))
    gp_table, gp_group, gp_permission = m2m(Group._meta.get_field("permissions"))
    return (
        f"EXISTS (SELECT 1 FROM {up_table} AS up"
        f" WHERE up.{up_user} = {user} AND up.{up_permission} = p.id)"
        f" OR EXISTS (SELECT 1 FROM {ug_table} AS ug"
        f" JOIN {gp_table} AS gp ON gp.{gp_group} = ug.{ug_group}"
        f" WHERE ug.{ug_user} = {user} AND gp.{gp_permission} = p.id)"
    )


# Ids one statement names at most (SQLite's default bound on parameters is 32,766).
_ID_SLICE = 10_000


@dataclass(frozen=True, slots=True)
class WaitingJob:
    """A waiting job the settling duty locked: its policy and each parent's status."""

    id: UUID
    type: str
    attempts: int
    on_parent_failure: str
    parents: dict[UUID, str]


class DependencyStatements:
    """The statements of job dependencies, the same ORM on every database: none of them is
    on a hot path (a create with ``depends_on``, the settling duty, a job's detail)."""

    def existing_job_ids(self, ids: Sequence[UUID | str]) -> set[UUID]:
        """Which of ``ids`` are jobs."""

        found: set[UUID] = set()
        ids = list(ids)
        # In slices: a workflow may name many, and SQLite bounds a statement's parameters.
        for start in range(0, len(ids), _ID_SLICE):
            part = ids[start : start + _ID_SLICE]
            found.update(Job.objects.filter(pk__in=part).values_list("pk", flat=True))
        return found

    def job_rows(self, ids: Sequence[UUID]) -> dict[UUID, JobRow]:
        """The rows of the jobs ``ids`` names, as they are now, by id."""

        rows: dict[UUID, JobRow] = {}
        for start in range(0, len(ids), _ID_SLICE):
            for job in Job.objects.filter(pk__in=list(ids[start : start + _ID_SLICE])):
                rows[job.pk] = JobRow(*(getattr(job, name) for name in JOB_ROW_FIELDS))
        return rows

    def create_workflow(self, workflow_id: UUID, *, name: str, now: datetime) -> None:
        """Write the workflow's row (its jobs are written by ``create_jobs``)."""

        Workflow.objects.create(id=workflow_id, name=name, created_at=now)

    def revive_dependents(
        self, parent_ids: Sequence[UUID], *, now: datetime, message: str, data: dict[str, Any]
    ) -> list[tuple[UUID, UUID]]:
        """Bring back to ``waiting`` the cancelled dependents of ``parent_ids`` whose
        cancel named one of them (the ``parent_id`` of their latest ``cancelled`` event:
        the settler's, never an operator's, which names none), then theirs, recursively;
        each gets a ``manual_retry`` event (``message``; ``data`` with its previous status
        and the parent that brought it back). Returns ``(job, parent)`` per job revived.

        Every dependent of a level is locked first (``FOR UPDATE``, whatever its status),
        so a settler that is cancelling one of them right now is waited for and its
        cancel seen: a dependent cannot be cancelled for a parent already retried and
        stay so. Inside the caller's transaction (the retry's)."""

        revived: list[tuple[UUID, UUID]] = []
        frontier = {str(parent): UUID(str(parent)) for parent in parent_ids}
        while frontier:
            children = list(
                JobDependency.objects.filter(parent_id__in=list(frontier.values()))
                .values_list("job_id", flat=True)
                .distinct()
            )
            if not children:
                break
            # Locked in id order, so two retries sharing dependents cannot deadlock.
            list(
                Job.objects.filter(pk__in=children)
                .order_by("pk")
                .select_for_update()
                .values_list("pk", flat=True)
            )
            cancelled = dict(
                Job.objects.filter(pk__in=children, status=JobStatus.CANCELLED).values_list(
                    "pk", "type"
                )
            )
            latest: dict[UUID, dict[str, Any]] = {}
            for job_id, event_data in (
                JobEvent.objects.filter(job_id__in=list(cancelled), type=JobEventType.CANCELLED)
                .order_by("job_id", "-id")
                .values_list("job_id", "data")
            ):
                latest.setdefault(job_id, event_data if isinstance(event_data, dict) else {})
            level = {
                job_id: frontier[str(latest[job_id].get("parent_id"))]
                for job_id in cancelled
                if str(latest.get(job_id, {}).get("parent_id")) in frontier
            }
            if not level:
                break
            Job.objects.filter(pk__in=list(level), status=JobStatus.CANCELLED).update(
                status=JobStatus.WAITING,
                finished_at=None,
                cancel_requested_at=None,
                last_error="",
                updated_at=now,
            )
            JobEvent.objects.bulk_create(
                JobEvent(
                    job_id=job_id,
                    type=JobEventType.MANUAL_RETRY,
                    attempt=0,
                    message=message,
                    data={
                        "previous_status": JobStatus.CANCELLED,
                        "parent_id": str(parent),
                        **data,
                    },
                    created_at=now,
                    job_type=cancelled[job_id],
                )
                for job_id, parent in level.items()
            )
            revived.extend(level.items())
            frontier = {str(job_id): job_id for job_id in level}
        return revived

    def add_dependencies(self, edges: Sequence[tuple[UUID, UUID, str]], *, now: datetime) -> None:
        """Each ``(job, parent, on_parent_failure)`` edge written, and its job, created
        queued in the same transaction, made waiting."""

        children = {job_id for job_id, _, _ in edges}
        Job.objects.filter(pk__in=children, status=JobStatus.QUEUED).update(
            status=JobStatus.WAITING, updated_at=now
        )
        JobDependency.objects.bulk_create(
            JobDependency(job_id=job_id, parent_id=parent_id, on_parent_failure=policy)
            for job_id, parent_id, policy in edges
        )

    def find_settleable_jobs(
        self, *, limit: int, after: tuple[datetime, UUID] | None = None
    ) -> tuple[list[UUID], tuple[datetime, UUID] | None]:
        """Which of the next ``limit`` waiting jobs after ``after`` (oldest first) their
        parents decide now, read without a lock (the settling transactions lock and check
        them again); and the last waiting job looked at when ``limit`` were (where the next
        probe starts), else ``None``. Two reads of at most ``limit`` rows of
        ``job_waiting_idx`` each, from the cursor on, however many jobs wait, and no
        transaction: a probe that finds nothing costs no commit."""

        # The window's ids first, then its decided jobs among them: with the window as a
        # subquery instead, PostgreSQL (no statistics yet on a fresh fan-out) checked the
        # parents of every waiting job and then kept the window's (0.8 s, not 0.05 s, at
        # 10,000 waiting).
        ids, resume = self._window(after, limit)
        if not ids:
            return [], None
        settleable = list(
            Job.objects.filter(pk__in=ids, status=JobStatus.WAITING)
            .filter(self._decided())
            .order_by("created_at", "id")
            .values_list("pk", flat=True)
        )
        return settleable, resume

    @staticmethod
    def _waiting_window(after: tuple[datetime, UUID] | None) -> QuerySet[Job]:
        """The waiting jobs after the cursor ``after``, oldest first: a range of
        job_waiting_idx that starts right after it, even inside a run of jobs created at
        one time (a bulk create's), through a row comparison both databases read as an
        index range."""
        window = Job.objects.filter(status=JobStatus.WAITING).order_by("created_at", "id")
        if after is None:
            return window
        return window.filter(TupleGreaterThan(Tuple(F("created_at"), F("id")), after))

    @classmethod
    def _window(
        cls, after: tuple[datetime, UUID] | None, limit: int
    ) -> tuple[list[UUID], tuple[datetime, UUID] | None]:
        """The ids of the next ``limit`` waiting jobs after ``after``, and the last one's
        cursor when the window was full (where the next one starts), else ``None``."""
        looked_at = list(cls._waiting_window(after).values_list("created_at", "id")[:limit])
        resume = looked_at[-1] if len(looked_at) == limit else None
        return [pk for _, pk in looked_at], resume

    @staticmethod
    def _decided() -> Q:
        """A waiting job whose parents decide it now: none unfinished, or one failed or
        cancelled under the ``cancel`` policy."""
        unfinished = JobDependency.objects.filter(job=OuterRef("pk")).exclude(
            parent__status__in=FINISHED_STATUSES
        )
        broken = JobDependency.objects.filter(
            job=OuterRef("pk"),
            on_parent_failure=OnParentFailure.CANCEL,
            parent__status__in=[JobStatus.FAILED, JobStatus.CANCELLED],
        )
        return ~Exists(unfinished) | Exists(broken)

    def lock_settleable_jobs(
        self,
        *,
        limit: int,
        ids: Sequence[UUID] | None = None,
        after: tuple[datetime, UUID] | None = None,
    ) -> tuple[list[WaitingJob], tuple[datetime, UUID] | None]:
        """The waiting jobs among ``ids``, or else among the next ``limit`` waiting jobs
        (oldest first) after ``after``, whose parents have all finished or of which one
        failed or was cancelled under the ``cancel`` policy, locked (``SKIP LOCKED``:
        concurrent duties split them) with their parents' statuses; and the last waiting
        job looked at when the window was full (where the next one starts), else ``None``.
        A window reads at most ``limit`` rows of ``job_waiting_idx``, however many jobs
        wait. Inside the caller's transaction."""

        jobs = Job.objects.filter(status=JobStatus.WAITING)
        resume: tuple[datetime, UUID] | None = None
        if ids is not None:
            jobs = jobs.filter(pk__in=list(ids))
        else:
            window, resume = self._window(after, limit)
            jobs = jobs.filter(pk__in=window)
        locked = list(
            jobs.filter(self._decided())
            .order_by("created_at", "id")
            .select_for_update(skip_locked=True)
            .values_list("pk", "type", "attempts")[:limit]
        )
        edges = JobDependency.objects.filter(job_id__in=[pk for pk, _, _ in locked]).values_list(
            "job_id", "parent_id", "parent__status", "on_parent_failure"
        )
        parents: dict[UUID, dict[UUID, str]] = {}
        policies: dict[UUID, str] = {}
        for job_id, parent_id, status, policy in edges:
            parents.setdefault(job_id, {})[parent_id] = status
            policies[job_id] = policy
        return [
            WaitingJob(
                pk,
                job_type,
                attempts,
                policies.get(pk, OnParentFailure.CANCEL),
                parents.get(pk, {}),
            )
            for pk, job_type, attempts in locked
        ], resume

    def settle_jobs(
        self,
        *,
        queued: Sequence[UUID],
        cancelled: Sequence[tuple[WaitingJob, str, dict[str, Any]]],
        now: datetime,
    ) -> list[str]:
        """Locked waiting jobs settled: ``queued`` ones due now (or later, as they were
        scheduled); ``cancelled`` ones finished with a ``cancelled`` event (message, data).
        Returns the queues of the ``queued`` ones."""

        Job.objects.filter(pk__in=list(queued), status=JobStatus.WAITING).update(
            status=JobStatus.QUEUED,
            available_at=Greatest("available_at", Value(now)),
            updated_at=now,
        )
        ids = [job.id for job, _, _ in cancelled]
        Job.objects.filter(pk__in=ids, status=JobStatus.WAITING).update(
            status=JobStatus.CANCELLED, finished_at=now, updated_at=now
        )
        JobEvent.objects.bulk_create(
            JobEvent(
                job_id=job.id,
                type=JobEventType.CANCELLED,
                attempt=job.attempts,
                message=message,
                data=data,
                created_at=now,
                job_type=job.type,
            )
            for job, message, data in cancelled
        )
        return sorted(set(Job.objects.filter(pk__in=list(queued)).values_list("queue", flat=True)))
