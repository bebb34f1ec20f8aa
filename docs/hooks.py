"""mkdocs hooks: the guide pages come from README.md's sections and the example pages
from examples/*.py, generated at build time so neither is copied into docs/."""
from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _readme_pages() -> dict[str, str]:
    """``{path: markdown}``: index.md (the introduction and "A taste") and one page per
    other ``##`` section of the README, numbered in README order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    parts = re.split(r"^## ", text, flags=re.M)
    intro, sections = parts[0], parts[1:]
    pages = {}
    index = [intro.rstrip() + "\n", "\n## " + sections[0]] if sections else [intro]
    pages["index.md"] = _links("".join(index), "")
    for i, sec in enumerate(sections[1:], start=1):
        title, _, body = sec.partition("\n")
        title = title.strip()
        pages[f"guide/{i:02d}-{_slug(title)}.md"] = _links(f"# {title}\n{body}", "../")
    return pages


def _links(md: str, up: str) -> str:
    """README links into docs/ and examples/ made relative to the generated page."""
    md = md.replace("](docs/", f"]({up}")
    return re.sub(r"\]\(examples/([\w-]+)\.py\)", rf"]({up}examples/\1.md)", md)


def _example_pages() -> dict[str, str]:
    pages = {}
    for path in sorted((ROOT / "examples").glob("*.py")):
        src = path.read_text(encoding="utf-8")
        pages[f"examples/{path.stem}.md"] = (
            f"# examples/{path.name}\n\nRun it with `python3 examples/{path.name}`.\n\n"
            f"```python\n{src}\n```\n")
    listing = "\n".join(f"- [{p.name}]({p.stem}.md)"
                        for p in sorted((ROOT / "examples").glob("*.py")))
    pages["examples/index.md"] = f"# Examples\n\nRunnable scripts in `examples/`:\n\n{listing}\n"
    return pages


def on_files(files, config):
    for path, content in {**_readme_pages(), **_example_pages()}.items():
        files.append(File.generated(config, path, content=content))
    return files
