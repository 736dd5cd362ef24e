"""The worker's parts import each other for real or not at all: an import hidden under
``if TYPE_CHECKING`` is invisible to the import contracts (``exclude_type_checking_imports``)
and is how calls came to climb back up the worker at run time."""

import ast
from pathlib import Path

import jobs.worker

WORKER_DIR = Path(jobs.worker.__file__).parent


def _type_checking_blocks(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.If)
        and "TYPE_CHECKING"
        in {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
        | {n.attr for n in ast.walk(node.test) if isinstance(n, ast.Attribute)}
    ]


def test_no_worker_module_imports_under_type_checking():
    modules = sorted(WORKER_DIR.rglob("*.py"))
    assert len(modules) > 5
    hidden = {
        str(path.relative_to(WORKER_DIR)): lines
        for path in modules
        if (lines := _type_checking_blocks(path))
    }
    assert hidden == {}
