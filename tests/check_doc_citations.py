#!/usr/bin/env python3
"""Fails when README.md or docs/*.md cite a file that is not in the repository.

What counts as a citation:
- a relative path whose first part names a directory of the repository
  (`src/control/lifecycle/reloader.cpp`, `tests/integration/`, or, as
  docs/ARCHITECTURE.md writes inside a part's section, `lifecycle/reloader`
  for src/control/lifecycle/reloader.{hpp,cpp});
- a relative path to a file of a kind the repository keeps (`notes/x.md`),
  whatever its first part;
- a bare name of a source or documentation file (`device_log.cpp`);
- any path starting with `../`: outside the repository, which its reader
  does not have, so always a miss.
A path resolves when a file or directory of the repository (tracked, or new
and not ignored) is that path or ends with it; a path without an extension
also names the files of that stem; `{a,b}` alternatives must all resolve;
`<kind>` and `*` stand for one part. Absolute paths, URLs and paths under
build/ or an install prefix (`P/...`) are the reader's machine, not the
repository, and are not checked.

    tests/check_doc_citations.py [SOURCE_DIR]     (exit 1, listing each miss)
"""
import fnmatch
import itertools
import os
import re
import subprocess
import sys

# Files the docs name and say are elsewhere.
EXTERNAL = {
    "docs/interop/vhost-user.json",  # QEMU's vhost-user back-end schema
    "docs/interop/vhost-user.rst",  # QEMU's vhost-user specification
    "DESIGN.md",  # the project's design map (docs/ARCHITECTURE.md: not in this repository)
}

# What the repository's files end in: a relative path to such a file is a
# citation even when its first part is no directory of the repository.
SOURCE_EXTENSIONS = (".md", ".c", ".h", ".cpp", ".hpp", ".py", ".sh", ".txt", ".in", ".toml",
                     ".yaml", ".yml", ".xml")

# Bare names of these kinds are citations (a bare `run.json` or
# `prometheus.yml` is what a tool writes or the reader keeps, not ours).
BARE_EXTENSIONS = (".c", ".h", ".cpp", ".hpp", ".py", ".sh", ".md", ".in")

TOKEN = re.compile(r"(?<![\w/.:$~>-])((?:\.\./)*[\w.<{*][\w.<>{},*-]*(?:/[\w.<>{},*-]+)+/?)")
BARE = re.compile(r"(?<![\w/.:$~>-])([\w-]+(?:\.[\w-]+)*)(?![\w/-])")


def repository_paths(top):
    try:
        out = subprocess.run(["git", "-C", top, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], check=True,
                             capture_output=True).stdout.decode()
        files = [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for root, dirs, names in os.walk(top):
            dirs[:] = [d for d in dirs if d != ".git" and not d.startswith("build")]
            files += [os.path.relpath(os.path.join(root, n), top) for n in names]
    dirs = {os.path.dirname(f) for f in files}
    while True:
        parents = {os.path.dirname(d) for d in dirs} - dirs
        if parents <= {""}:
            break
        dirs |= parents
    dirs.discard("")
    return set(files), dirs


def expand(path):
    """`a.{hpp,cpp}` -> a.hpp, a.cpp; `<kind>` -> *."""
    path = re.sub(r"<[^>/]*>", "*", path)
    parts = re.split(r"\{([^{}]*)\}", path)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*choices)]


def resolves(path, files, dirs):
    path = path.rstrip("/")
    pattern = path if "*" in path else None
    has_extension = "." in os.path.basename(path).strip(".")
    for candidate in itertools.chain(files, dirs):
        if pattern:
            if fnmatch.fnmatch(candidate, pattern) or fnmatch.fnmatch(candidate, "*/" + pattern):
                return True
            continue
        if candidate == path or candidate.endswith("/" + path):
            return True
        if not has_extension and candidate in files:
            stem = os.path.splitext(candidate)[0]
            if stem == path or stem.endswith("/" + path):
                return True
    return False


def citations(text, dir_names):
    for line_no, line in enumerate(text.splitlines(), 1):
        for match in TOKEN.finditer(line):
            token = match.group(1).rstrip(".,;:")
            if token.startswith("../"):
                yield line_no, token
                continue
            first = token.split("/", 1)[0]
            if first in ("build", "P", "PREFIX"):
                continue
            if first not in dir_names and not token.endswith(SOURCE_EXTENSIONS):
                continue
            if token.rstrip("/") in EXTERNAL:
                continue
            yield line_no, token
        for match in BARE.finditer(line):
            name = match.group(1)
            if name.endswith(BARE_EXTENSIONS) and name not in EXTERNAL:
                yield line_no, name


def main():
    top = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                          os.path.join(os.path.dirname(__file__), ".."))
    files, dirs = repository_paths(top)
    dir_names = {os.path.basename(d) for d in dirs}
    docs = ["README.md"] + sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(top, "docs"))
                                  if f.endswith(".md"))
    missing = []
    checked = 0
    for doc in docs:
        with open(os.path.join(top, doc), encoding="utf-8") as f:
            text = f.read()
        for line_no, token in citations(text, dir_names):
            checked += 1
            if token.startswith("../"):
                missing.append(f"{doc}:{line_no}: {token} (outside the repository)")
            elif not all(resolves(p, files, dirs) for p in expand(token)):
                missing.append(f"{doc}:{line_no}: {token}")
    for m in missing:
        print(m)
    print(f"{checked} citations in {len(docs)} files, {len(missing)} not in the repository")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
