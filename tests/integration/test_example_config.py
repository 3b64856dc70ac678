"""conf/pgleader.conf, the example configuration: each commented key shows its
default, as --help states it, unless the comment above it marks the value as
an example."""

import os
import re
import subprocess

import pgharness as h

CONF = os.path.join(h.REPO, "conf", "pgleader.conf")
FALSE = {"false", "off", "no", "0"}


def help_defaults():
    out = subprocess.run([h.pgleader_bin(), "--help"], stdout=subprocess.PIPE, check=True,
                         timeout=10).stdout.decode()
    return dict(re.findall(r"key: (\w+), default: (.*)", out))


def commented_keys():
    """[(key, value, comment above it)] for each '#key = value' line."""
    out, comment = [], []
    with open(CONF) as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^#([a-z_]+) = (.*)$", line)
            if m:
                out.append((m.group(1), m.group(2), " ".join(comment)))
                comment = []
            elif line.startswith("# "):
                comment.append(line[2:])
            else:
                comment = []
    return out


def same(value, default):
    return value == default or (value in FALSE and default in FALSE)


def test_values_are_defaults_or_marked_examples():
    defaults = help_defaults()
    keys = commented_keys()
    assert {k for k, _, _ in keys} >= set(defaults), "keys missing from %s" % CONF
    wrong = []
    for key, value, comment in keys:
        example = "An example:" in comment
        has_default = key in defaults and defaults[key] not in ("none", "off") \
            and not defaults[key].startswith(("libpq", "host name"))
        if example and has_default and same(value, defaults[key]):
            wrong.append("%s: its default %r is marked as an example" % (key, value))
        if not example and not (key in defaults and same(value, defaults[key])):
            wrong.append("%s = %s: not the default (%s), and not marked 'An example:'" % (
                key, value, defaults.get(key, "none")))
    assert not wrong, "\n".join(wrong)

