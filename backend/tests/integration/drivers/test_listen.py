"""The PostgreSQL driver's listening connection never LISTENs on a server in recovery: a
standby refuses LISTEN and never hears the primary's notifications, so it is refused as
read-only before any LISTEN, and the listener backs off as from a lost connection."""

import pytest

from jobs.drivers import ServerInRecovery, is_read_only
from tests.conftest import private_postgres_server

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


@pytest.fixture
def server_in_recovery():
    """A server of the test's own that stays in recovery: a standby with no primary."""
    with private_postgres_server() as server:
        server.pg_ctl("-w", "stop")
        (server.data / "standby.signal").touch()
        server.start()
        assert server.in_recovery()
        yield server


def test_the_listening_connection_refuses_a_server_in_recovery_before_any_listen(
    server_in_recovery, settings
):
    from jobs.drivers.postgres import PostgresDriver

    # Pointed straight at it, as POSTGRES_LISTEN_HOST may be, with libpq's own read-write
    # check off: the driver's check is the one that refuses.
    settings.JOB_WORKER_LISTEN_OPTIONS = {
        "host": "127.0.0.1",
        "port": server_in_recovery.port,
        "dbname": server_in_recovery.database,
        "target_session_attrs": "any",
    }
    listen = PostgresDriver().listen(application_name="test-listener")
    with pytest.raises(ServerInRecovery) as refused, listen:
        pass
    assert is_read_only(refused.value)
    listening = server_in_recovery.query(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'test-listener'"
    )
    assert listening == [(0,)]
