"""Publish the repository's ``assets/`` folder with the documentation site.

The diagrams and screenshots live in ``assets/`` at the repository root, beside the
README that embeds them too. A page under ``docs/`` refers to them by their real relative
path (``../assets/...`` from ``docs/``, ``../../assets/...`` one folder down), so the links
work on GitHub and in an editor. MkDocs resolves such a link to ``../assets/...`` relative
to ``docs/``; this hook registers every file of ``assets/`` under exactly that name, and
writes it to ``site/assets/...``. Links to a missing file still fail the strict build.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files, InclusionLevel

ASSETS = "assets"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    docs_dir = Path(config.docs_dir)
    assets = docs_dir.parent / ASSETS
    for path in sorted(assets.rglob("*")):
        if not path.is_file():
            continue
        relative = path.relative_to(assets).as_posix()
        files.append(
            File(
                f"../{ASSETS}/{relative}",
                src_dir=str(docs_dir),
                dest_dir=config.site_dir,
                use_directory_urls=config.use_directory_urls,
                dest_uri=f"{ASSETS}/{relative}",
                # Named "../assets/...", which MkDocs's default exclusion of dot-paths matches.
                inclusion=InclusionLevel.INCLUDED,
            )
        )
    return files
