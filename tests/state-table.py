#!/usr/bin/env python3
"""state-table.py [--check]: the election's states table as election.h
shows it, read from states[] in src/decide/election.c and each state's row
(struct state_ops) in src/decide/election*.c: one line per state, naming the
handler of each event it handles (events not named are ignored there).
--check: exit 1, with a diff, when election.h's copy differs; --update:
write it there."""
import difflib
import glob
import os
import re
import sys

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
HEADER = os.path.join(TOP, "src", "decide", "election.h")
BEGIN = " * The table (tests/state-table.py prints it; make lint checks it):\n"
END = " * (end of the table)\n"
# state_ops' fields in the order shown, and what the diagram calls them
CELLS = [("start", "START"), ("shutdown", "SHUTDOWN"),
         ("lock.connected", "CONNECTED"), ("lock.failed", "FAILED"),
         ("lock.acquired", "ACQUIRED"), ("lock.busy", "BUSY"),
         ("lock.ping_ok", "PING_OK"), ("lock.released", "RELEASED"),
         ("lock.granted", "GRANTED"), ("command_gone", "GONE"),
         ("deadlines", "deadlines"), ("fence", "fence")]
WIDTH = 78


def source():
    text = ""
    for path in sorted(glob.glob(os.path.join(TOP, "src", "decide", "election*.c"))):
        with open(path, encoding="utf-8") as f:
            text += f.read()
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def fields(body, prefix=""):
    """.name = value pairs of a designated initializer, nested ones as
    outer.inner."""
    out = {}
    for m in re.finditer(r"\.(\w+)\s*=\s*(\{[^{}]*\}|\w+)", body):
        name, value = m.group(1), m.group(2)
        if value.startswith("{"):
            out.update(fields(value[1:-1], prefix + name + "."))
        else:
            out[prefix + name] = value
    return out


def rows(text):
    table = re.search(r"states\[ELECTION_STATE_COUNT\]\s*=\s*\{(.*?)\};",
                      text, re.S)
    if not table:
        sys.exit("state-table: no states[] in src/decide/election.c")
    for state, row in re.findall(r"\[ELECTION_(\w+)\]\s*=\s*&(\w+)",
                                 table.group(1)):
        body = re.search(r"struct state_ops " + row +
                         r"\s*=\s*\{((?:[^{}]|\{[^{}]*\})*)\};", text)
        if not body:
            sys.exit("state-table: no row " + row)
        yield state, fields(body.group(1))


def diagram():
    lines = []
    for state, cells in rows(source()):
        words = ["%s %s" % (label, cells[field])
                 for field, label in CELLS if field in cells]
        line = " * %-14s" % state
        first = True
        for word in words or ["-"]:
            sep = "" if first else ", "
            if not first and len(line) + len(sep) + len(word) > WIDTH - 1:
                lines.append(line + ",\n")
                line, sep = " * " + " " * 14, ""
            line += sep + word
            first = False
        lines.append(line + "\n")
    return lines


def main():
    lines = diagram()
    if sys.argv[1:] not in (["--check"], ["--update"]):
        sys.stdout.write("".join(lines))
        return 0
    with open(HEADER, encoding="utf-8") as f:
        header = f.readlines()
    try:
        start = header.index(BEGIN) + 1
        end = header.index(END, start)
    except ValueError:
        print("state-table: src/decide/election.h has no table between %r and %r"
              % (BEGIN.strip(), END.strip()), file=sys.stderr)
        return 1
    if header[start:end] == lines:
        return 0
    if sys.argv[1:] == ["--update"]:
        with open(HEADER, "w", encoding="utf-8") as f:
            f.writelines(header[:start] + lines + header[end:])
        return 0
    sys.stderr.writelines(difflib.unified_diff(
        header[start:end], lines, "src/decide/election.h", "tests/state-table.py"))
    return 1


if __name__ == "__main__":
    sys.exit(main())
