"""This project's PostgreSQL settings (config/database.py): one host by default, several
hosts or a DSN for a primary and its standbys, read-write sessions, TCP timeouts."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.database import postgres_database

pytestmark = pytest.mark.engine_independent

UNSET = dict.fromkeys(
    ("POSTGRES_DB", "POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_HOST", "POSTGRES_PORT")
)


def database(dsn: str = "", attrs: str = "read-write", **variables: str) -> dict:
    return postgres_database(
        dsn=dsn,
        variables={**UNSET, **variables},
        target_session_attrs=attrs,
        connect_timeout=5,
        tcp_timeout=10,
        conn_max_age=0,
        prepared_statements=True,
        transaction_pooling=False,
    )


def test_without_variables_it_is_the_spec_defaults_on_one_host():
    db = database()
    assert (db["NAME"], db["USER"], db["PASSWORD"], db["HOST"], db["PORT"]) == (
        "job_queue",
        "postgres",
        "postgres",
        "localhost",
        "5432",
    )


def test_every_connection_asks_for_a_read_write_session_by_default():
    assert database()["OPTIONS"]["target_session_attrs"] == "read-write"


def test_several_hosts_share_one_port_or_have_one_each():
    assert database(POSTGRES_HOST="a, b")["HOST"] == "a,b"
    two = database(POSTGRES_HOST="a,b", POSTGRES_PORT="5432,5433")
    assert (two["HOST"], two["PORT"]) == ("a,b", "5432,5433")


def test_a_port_list_that_does_not_match_the_hosts_is_refused():
    with pytest.raises(ImproperlyConfigured, match="3 ports for 2 hosts"):
        database(POSTGRES_HOST="a,b", POSTGRES_PORT="1,2,3")


def test_a_port_that_is_not_a_port_is_refused():
    with pytest.raises(ImproperlyConfigured, match="POSTGRES_PORT"):
        database(POSTGRES_PORT="5432,x")


def test_a_dsn_gives_hosts_and_credentials_and_its_other_keywords_reach_libpq():
    db = database(
        "postgresql://app:secret@a:5432,b:5433/queue?sslmode=require&target_session_attrs=primary",
        POSTGRES_DB="ignored",
    )
    assert (db["NAME"], db["USER"], db["PASSWORD"]) == ("queue", "app", "secret")
    assert (db["HOST"], db["PORT"]) == ("a,b", "5432,5433")
    assert db["OPTIONS"]["sslmode"] == "require"
    assert db["OPTIONS"]["target_session_attrs"] == "primary"


def test_variables_fill_in_what_the_dsn_leaves_out():
    db = database("host=a,b dbname=queue", POSTGRES_USER="app", POSTGRES_PORT="6432")
    assert (db["HOST"], db["PORT"], db["USER"], db["NAME"]) == ("a,b", "6432", "app", "queue")


def test_a_dsn_that_libpq_cannot_read_is_refused():
    with pytest.raises(ImproperlyConfigured, match="POSTGRES_DSN"):
        database("host=a unterminated='")


def test_an_unknown_target_session_attrs_is_refused():
    with pytest.raises(ImproperlyConfigured, match="read-write, primary, any"):
        database(attrs="standby")


def test_keepalives_and_tcp_user_timeout_are_set_on_every_connection():
    options = database()["OPTIONS"]
    assert options["keepalives"] == 1
    assert options["tcp_user_timeout"] == 10_000
    assert options["keepalives_idle"] + options["keepalives_interval"] * 3 <= 11
    assert options["connect_timeout"] == 5
