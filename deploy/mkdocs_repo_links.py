"""MkDocs hook: links from the book to repository files outside `docs/`.

The book's pages link to files beside it in the repository (SECURITY.md, BENCHMARKS.md,
the README, sources). MkDocs cannot resolve those and, in strict mode, fails on them. This
hook checks that each such target exists in the checkout, failing the build naming the page
and the link when it does not, and rewrites the link: to the file in the repository's web
view when `repo_url` is set in mkdocs.yml, else to the plain path, shown as code.
"""

import os
import re

from mkdocs.exceptions import PluginError

LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def _outside_target(page_path, docs_dir, target):
    """The repository path a link points to when it leaves docs_dir, else None."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
        return None
    path = target.split("#", 1)[0]
    if not path:
        return None
    resolved = os.path.normpath(os.path.join(os.path.dirname(page_path), path))
    if resolved == docs_dir or resolved.startswith(docs_dir + os.sep):
        return None
    return resolved


def on_page_markdown(markdown, page, config, files):
    docs_dir = os.path.normpath(config["docs_dir"])
    repo_root = os.path.dirname(os.path.normpath(config["config_file_path"]))
    repo_url = (config.get("repo_url") or "").rstrip("/")
    out, in_fence = [], False
    for line in markdown.split("\n"):
        if FENCE.match(line):
            in_fence = not in_fence
        if in_fence:
            out.append(line)
            continue

        def rewrite(m):
            bang, text, target = m.groups()
            resolved = _outside_target(page.file.abs_src_path, docs_dir, target)
            if resolved is None:
                return m.group(0)
            if not os.path.exists(resolved):
                raise PluginError(
                    f"{page.file.src_uri}: link '{target}' points to {resolved}, which does not exist"
                )
            rel = os.path.relpath(resolved, repo_root)
            anchor = "#" + target.split("#", 1)[1] if "#" in target else ""
            if repo_url:
                return f"{bang}[{text}]({repo_url}/blob/HEAD/{rel}{anchor})"
            return text if text == rel else f"{text} (`{rel}`)"

        out.append(LINK.sub(rewrite, line))
    return "\n".join(out)
