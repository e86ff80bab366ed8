#!/usr/bin/env python3
"""Every break of the public API that api/allowed-breaks.txt allows is
explained in CHANGELOG.md's next section, with its migration.

CHANGELOG.md's first section ("## Unreleased") has a subsection
"### API breaks"; each allowed break is a bullet that starts with the
exact line of the allow-list in backticks (the message
`swift package diagnose-api-breaking-changes` prints) and says
"Migration:" and what to do. Run from the repository's root; exits 1 with
a line per problem.
"""
import re
import sys

ALLOWED = "api/allowed-breaks.txt"
CHANGELOG = "CHANGELOG.md"


def next_section(text):
    """The text of the first "## " section, which must be "Unreleased"."""
    match = re.search(r"^## (.*)$", text, re.M)
    if not match or match.group(1).strip() != "Unreleased":
        return None
    rest = text[match.end():]
    end = re.search(r"^## ", rest, re.M)
    return rest[: end.start()] if end else rest


def api_breaks(section):
    """The bullets of the section's "### API breaks": message -> its text."""
    match = re.search(r"^### API breaks\s*$", section, re.M)
    if not match:
        return None
    rest = section[match.end():]
    end = re.search(r"^### ", rest, re.M)
    body = rest[: end.start()] if end else rest
    bullets = {}
    for bullet in re.split(r"^- ", body, flags=re.M)[1:]:
        head = re.match(r"`([^`]+)`", bullet)
        if head:
            bullets[head.group(1)] = bullet[head.end():]
    return bullets


def main():
    with open(ALLOWED, encoding="utf-8") as file:
        allowed = [line.strip() for line in file if line.strip()]
    with open(CHANGELOG, encoding="utf-8") as file:
        section = next_section(file.read())
    problems = []
    if section is None:
        problems.append(f"{CHANGELOG}: its first section must be '## Unreleased', above the last release")
    else:
        bullets = api_breaks(section)
        if bullets is None:
            problems.append(f"{CHANGELOG}: '## Unreleased' has no '### API breaks' subsection")
        else:
            for line in allowed:
                text = bullets.get(line)
                if text is None:
                    problems.append(f"{ALLOWED}: '{line}' is not explained in {CHANGELOG}'s '### API breaks' "
                                    f"(a bullet starting with it in backticks, then 'Migration:')")
                elif not re.search(r"Migration:\s*\S", text):
                    problems.append(f"{CHANGELOG}: the break '{line}' says no 'Migration:'")
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if not problems:
        print(f"{len(allowed)} allowed API break(s), each explained in {CHANGELOG} with its migration")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
