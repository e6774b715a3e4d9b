"""The tasks of scripts/e2e/tasks.py: what a person asks first, in their words.

Each task is (name, half, files, prompt, check). `half` is "tune" or "held": changes to
saki are judged on the tuning half, and the held-out half says whether they generalise
(its failures are not looked at while tuning; the runner prints only its totals).
`check(ws, answer)` returns None when the task is done, else what is wrong. A task in
QUESTIONS also fails when any file changed.
"""

import json
import os
import re
import subprocess


def read(ws, name):
    try:
        with open(os.path.join(ws, name), encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def run(ws, *cmd):
    """Runs a command in the workspace: (exit code, stdout + stderr)."""
    try:
        out = subprocess.run(list(cmd), cwd=ws, capture_output=True, text=True, timeout=30,
                             stdin=subprocess.DEVNULL)
        return out.returncode, out.stdout + out.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return -1, str(e)


def has(a, *words):
    return all(w.lower() in a.lower() for w in words)


def py_ok(ws, code, what):
    """None when `python3 -c code` succeeds in the workspace, else why not."""
    code_, out = run(ws, "python3", "-c", code)
    return None if code_ == 0 else "%s: %s" % (what, out.strip().splitlines()[-1:] or "failed")


def file_is(ws, name, body):
    return None if read(ws, name) == body else "%s is %r" % (name, read(ws, name))


def json_at(ws, name, key, want):
    try:
        got = json.loads(read(ws, name) or "")
    except ValueError:
        return "%s is not JSON: %r" % (name, read(ws, name))
    return None if got.get(key) == want else "%s is %r" % (name, read(ws, name))


CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
SETTINGS = "NAME = 'shop'\nDEBUG = True\nPORT = 8000\n"
GREET = "def greet(name):\n    return 'Hello, ' + name\n"
APP = "from greetings import greet\n\nprint(greet('Ann'))\n"
UTILS = "def is_even(n):\n    return n % 2 == 1\n"
TEST_UTILS = ("from utils import is_even\n\nassert is_even(4)\nassert not is_even(7)\n"
              "print('ok')\n")
SHAPES = ("import math\n\n\ndef area_circle(r):\n    return math.pi * r * r\n\n\n"
          "def area_square(s):\n    return s * s\n\n\ndef area_rect(w, h):\n    return w * h\n")

TASKS = [
    ("read-word", "tune", {"NOTE.txt": "The secret word is MANGO.\n"},
     "Read NOTE.txt and tell me the secret word.",
     lambda ws, a: None if has(a, "mango") else "answer lacks MANGO"),
    ("find-definition", "held", {
        "src/util.py": "def helper():\n    return 1\n",
        "src/config.py": "import os\n\ndef parse_config(path):\n    return {}\n",
        "src/main.py": "from config import parse_config\n",
    }, "Which file defines the function parse_config?",
     lambda ws, a: None if "config.py" in a else "answer lacks config.py"),
    ("create-file", "tune", {}, "Create a file hello.txt containing the text: hello world",
     lambda ws, a: None if (read(ws, "hello.txt") or "").strip() == "hello world"
     else "hello.txt is %r" % read(ws, "hello.txt")),
    ("change-value", "held", {"config.json": '{\n  "name": "app",\n  "port": 8080\n}\n'},
     "In config.json, change the port to 9090.",
     lambda ws, a: json_at(ws, "config.json", "port", 9090)),
    ("count-lines", "tune", {"data.csv": "".join("row%d,%d\n" % (i, i * i) for i in range(17))},
     "How many lines does data.csv have?",
     lambda ws, a: None if "17" in a else "answer lacks 17"),
    ("list-directory", "held",
     {"docs/intro.md": "# Intro\n", "docs/usage.md": "# Usage\n", "docs/faq.md": "# FAQ\n"},
     "List the files in the docs directory.",
     lambda ws, a: None if all(n in a for n in ("intro.md", "usage.md", "faq.md"))
     else "answer lacks a docs file"),
    ("append-line", "tune", {"TODO.md": "# TODO\n- write tests\n"},
     "Append the line '- buy milk' to TODO.md.",
     lambda ws, a: None if (read(ws, "TODO.md") or "").rstrip().endswith("- buy milk")
     and "- write tests" in (read(ws, "TODO.md") or "") else "TODO.md is %r" % read(ws, "TODO.md")),
    ("replace-word", "held", {"README.md": "The colour of the sky.\nA colour chart.\n"},
     "In README.md, replace every 'colour' with 'color'.",
     lambda ws, a: file_is(ws, "README.md", "The color of the sky.\nA color chart.\n")),
    ("read-version", "tune",
     {"package.json": '{"name": "web", "version": "3.14.2", "private": true}\n'},
     "What version is in package.json?",
     lambda ws, a: None if "3.14.2" in a else "answer lacks 3.14.2"),
    ("delete-file", "held", {"tmp.log": "noise\n", "keep.txt": "keep\n"},
     "Delete the file tmp.log.",
     lambda ws, a: None if read(ws, "tmp.log") is None and read(ws, "keep.txt") == "keep\n"
     else "tmp.log still there or keep.txt touched"),
    ("run-program", "tune", {"calc.py": "print(6 * 7)\n"},
     "Run calc.py with python3 and tell me what it prints.",
     lambda ws, a: None if "42" in a else "answer lacks 42"),
    ("grep-count", "held", {
        "src/a.py": "# TODO: one\nx = 1\n# TODO: two\n",
        "src/b.py": "y = 2\n# TODO: three\n",
    }, "How many TODO comments are there in the src directory?",
     lambda ws, a: None if "3" in a or "three" in a.lower() else "answer lacks 3"),
    # Shapes the first twelve lack: fixes checked by running them, several files,
    # structured formats, answers deeper in the tree, questions that must change nothing.
    ("fix-add", "tune", {"calc.py": CALC},
     "The add function in calc.py gives the wrong result. Fix it.",
     lambda ws, a: py_ok(ws, "import calc; assert calc.add(2, 3) == 5; assert calc.sub(5, 3) == 2",
                         "calc.add still wrong")),
    ("explain-function", "held", {"calc.py": CALC.replace("a - b\n\n", "a + b\n\n", 1)},
     "What does add in calc.py do?",
     lambda ws, a: None if re.search(r"\b(sum|adds|add)\b|\+", a) else "answer does not say"),
    ("remove-setting", "tune", {"settings.py": SETTINGS},
     "Remove the DEBUG line from settings.py.",
     lambda ws, a: file_is(ws, "settings.py", "NAME = 'shop'\nPORT = 8000\n")),
    ("drop-dependency", "held", {"requirements.txt": "flask==3.0.0\nrequests==2.31.0\npytest==8.0.0\n"},
     "We no longer use requests; take it out of requirements.txt.",
     lambda ws, a: file_is(ws, "requirements.txt", "flask==3.0.0\npytest==8.0.0\n")),
    ("yaml-replicas", "tune", {"deploy.yaml": "name: api\nreplicas: 2\nimage: api:1.4\n"},
     "Scale the api to 5 replicas in deploy.yaml.",
     lambda ws, a: file_is(ws, "deploy.yaml", "name: api\nreplicas: 5\nimage: api:1.4\n")),
    ("toml-bump", "held", {"pyproject.toml": '[project]\nname = "tool"\nversion = "0.3.1"\n'},
     "Bump the version in pyproject.toml to 0.4.0.",
     lambda ws, a: file_is(ws, "pyproject.toml", '[project]\nname = "tool"\nversion = "0.4.0"\n')),
    ("csv-total", "tune", {"sales.csv": "item,amount\npen,3\nbook,12\nbag,25\n"},
     "What is the total of the amount column in sales.csv?",
     lambda ws, a: None if "40" in a else "answer lacks 40"),
    ("deep-port", "held", {
        "services/api/settings.ini": "[server]\nhost = 0.0.0.0\nport = 7311\n",
        "services/web/settings.ini": "[server]\nhost = 0.0.0.0\nport = 8000\n",
        "README.md": "# Two services\n",
    }, "Which port does the api service listen on?",
     lambda ws, a: None if "7311" in a else "answer lacks 7311"),
    ("rename-function", "tune", {"greetings.py": GREET, "app.py": APP},
     "Rename the function greet to welcome, in greetings.py and where app.py uses it.",
     lambda ws, a: None if run(ws, "python3", "app.py")[1].strip() == "Hello, Ann"
     and "greet(" not in (read(ws, "app.py") or "") + (read(ws, "greetings.py") or "")
     and "def welcome" in (read(ws, "greetings.py") or "")
     else "app.py: %r" % run(ws, "python3", "app.py")[1][-200:]),
    ("add-function", "held", {"mathutils.py": "def double(x):\n    return 2 * x\n"},
     "Add a function multiply(a, b) to mathutils.py that returns a times b.",
     lambda ws, a: py_ok(ws, "import mathutils as m; assert m.multiply(3, 4) == 12; "
                             "assert m.double(2) == 4", "multiply missing or wrong")),
    ("fix-json", "tune", {"config.json": '{\n  "name": "app",\n  "debug": false,\n}\n'},
     "config.json does not parse. Fix it without changing its values.",
     lambda ws, a: None if json.loads(read(ws, "config.json") or "null")
     == {"name": "app", "debug": False} else "config.json is %r" % read(ws, "config.json")),
    ("make-tests-pass", "held", {"utils.py": UTILS, "test_utils.py": TEST_UTILS},
     "python3 test_utils.py fails. Fix the code so it passes.",
     lambda ws, a: None if run(ws, "python3", "test_utils.py")[0] == 0
     and read(ws, "test_utils.py") == TEST_UTILS else "test_utils.py still fails or was changed"),
    ("markdown-section", "tune", {"README.md": "# Tool\n\nDoes things.\n"},
     "Add a section titled License to the end of README.md that says MIT.",
     lambda ws, a: None if re.search(r"#+ *License\s*\n+\s*MIT", read(ws, "README.md") or "")
     and (read(ws, "README.md") or "").startswith("# Tool\n\nDoes things.")
     else "README.md is %r" % read(ws, "README.md")),
    ("count-python-files", "held", {
        "main.py": "", "lib/io.py": "", "lib/net.py": "", "tests/test_io.py": "",
        "notes.md": "", "data.json": "{}\n",
    }, "How many Python files does this project have?",
     lambda ws, a: None if re.search(r"\b(4|four)\b", a.lower()) else "answer lacks 4"),
    ("who-imports", "tune", {
        "fetch.py": "import requests\n\nrequests.get('http://x')\n",
        "report.py": "import csv\n",
        "sync.py": "import os\nimport requests\n",
        "cli.py": "import argparse\n",
    }, "Which files import requests?",
     lambda ws, a: None if "fetch.py" in a and "sync.py" in a and "report.py" not in a
     and "cli.py" not in a else "answer is not fetch.py and sync.py"),
    ("create-json", "held", {},
     "Create settings.json with a key theme set to dark.",
     lambda ws, a: json_at(ws, "settings.json", "theme", "dark")),
    ("count-functions", "tune", {"shapes.py": SHAPES},
     "How many functions are defined in shapes.py?",
     lambda ws, a: None if re.search(r"\b(3|three)\b", a.lower()) else "answer lacks 3"),
    ("log-level", "held", {"logging.ini": "[logger]\nlevel = DEBUG\nfile = app.log\n"},
     "Change the log level in logging.ini from DEBUG to INFO.",
     lambda ws, a: file_is(ws, "logging.ini", "[logger]\nlevel = INFO\nfile = app.log\n")),
    ("add-requirement", "tune", {"requirements.txt": "flask==3.0.0\n"},
     "Add pyyaml to requirements.txt.",
     lambda ws, a: None if re.search(r"(?im)^pyyaml", read(ws, "requirements.txt") or "")
     and "flask==3.0.0" in (read(ws, "requirements.txt") or "")
     else "requirements.txt is %r" % read(ws, "requirements.txt")),
    ("docs-command", "held", {
        "README.md": "# Shop\n\nSee docs/ for how to work on it.\n",
        "docs/dev/setup.md": "# Setup\n\nInstall with `make deps`.\nStart the development "
                             "server with `make serve`.\n",
    }, "How do I start the development server?",
     lambda ws, a: None if "make serve" in a else "answer lacks make serve"),
    ("remove-unused-file", "tune",
     {"old_helpers.py": "def unused():\n    pass\n", "helpers.py": "def used():\n    pass\n"},
     "old_helpers.py is not used anymore, remove it.",
     lambda ws, a: None if read(ws, "old_helpers.py") is None
     and read(ws, "helpers.py") == "def used():\n    pass\n" else "old_helpers.py kept or helpers.py touched"),
    ("replace-email", "held", {
        "README.md": "Contact: old@example.com\n",
        "setup.cfg": "[metadata]\nauthor_email = old@example.com\n",
    }, "Our contact email changed from old@example.com to new@example.com. Update it everywhere.",
     lambda ws, a: None if read(ws, "README.md") == "Contact: new@example.com\n"
     and read(ws, "setup.cfg") == "[metadata]\nauthor_email = new@example.com\n"
     else "README.md %r, setup.cfg %r" % (read(ws, "README.md"), read(ws, "setup.cfg"))),
    ("env-value", "tune", {".env": "DATABASE_URL=postgres://db:5432/shop\nSECRET=x\n",
                           "app.py": "import os\nurl = os.environ['DATABASE_URL']\n"},
     "What database URL does the app use?",
     lambda ws, a: None if "postgres://db:5432/shop" in a else "answer lacks the URL"),
    ("comment-out", "held", {"run.sh": "#!/bin/sh\necho start\nrm -rf build\necho done\n"},
     "In run.sh, comment out the rm line.",
     lambda ws, a: None if re.fullmatch(r"#!/bin/sh\necho start\n# ?rm -rf build\necho done\n",
                                        read(ws, "run.sh") or "") else "run.sh is %r" % read(ws, "run.sh")),
]

# The suite's first twelve tasks: the everyday shapes it began with (one file, one step).
FIRST_SHAPES = {t[0] for t in TASKS[:12]}

# Tasks that ask only a question: passing also means every file is left as it was (a model
# that "answers" by rewriting calc.py to print 42 has not passed).
QUESTIONS = {"read-word", "find-definition", "count-lines", "list-directory", "read-version",
             "run-program", "grep-count", "explain-function", "csv-total", "deep-port",
             "count-python-files", "who-imports", "count-functions", "docs-command",
             "env-value"}


def prints(ws, want, *cmd):
    """None when running cmd in the workspace exits 0 and prints want, else what it did."""
    code, out = run(ws, *cmd)
    return None if code == 0 and out.strip() == want else "%s: exit %s, %r" % (
        " ".join(cmd), code, out.strip()[-200:])


def ini_value(ws, name, section, key):
    import configparser
    parser = configparser.ConfigParser()
    try:
        parser.read_string(read(ws, name) or "")
        return parser.get(section, key)
    except (configparser.Error, KeyError):
        return None


def json_path(ws, name, *keys):
    try:
        value = json.loads(read(ws, name) or "")
        for key in keys:
            value = value[key]
        return value
    except (ValueError, KeyError, TypeError):
        return None


STACK = ("class Stack:\n    def __init__(self):\n        self.items = []\n\n"
         "    def push(self, x):\n        self.items.append(x)\n\n"
         "    def pop(self):\n        return self.items[0]\n")
TEST_STACK = ("from stack import Stack\n\ns = Stack()\ns.push(1)\ns.push(2)\n"
              "assert s.pop() == 2\nprint('ok')\n")

# The second set: trees a level or two deep, several files, structured formats, fixes
# checked by running them. Written before any was run; tuning and held-out alternate.
TASKS += [
    ("nested-constant", "tune",
     {"src/shop/config.py": "TAX_RATE = 0.2\nCURRENCY = 'EUR'\n", "src/shop/__init__.py": "",
      "README.md": "# Shop\n"},
     "What currency does the shop use?",
     lambda ws, a: None if has(a, "EUR") else "answer lacks EUR"),
    ("nested-fix-run", "held",
     {"lib/mathx/ops.py": "def mul(a, b):\n    return a + b\n", "lib/mathx/__init__.py": "",
      "run.py": "import sys\nsys.path.insert(0, 'lib')\nfrom mathx.ops import mul\n\nprint(mul(3, 4))\n"},
     "run.py should print 12 but it prints something else. Fix the bug.",
     lambda ws, a: prints(ws, "12", "python3", "run.py")),
    ("toml-version", "tune",
     {"pyproject.toml": '[project]\nname = "tool"\nversion = "0.3.1"\n'},
     "Bump the version in pyproject.toml to 0.4.0",
     lambda ws, a: None if re.search(r'^version = "0\.4\.0"$', read(ws, "pyproject.toml") or "", re.M)
     and 'name = "tool"' in (read(ws, "pyproject.toml") or "")
     else "pyproject.toml is %r" % read(ws, "pyproject.toml")),
    ("ini-port", "held",
     {"app.ini": "[server]\nhost = 0.0.0.0\nport = 8080\n\n[db]\nname = shop\n"},
     "Change the server port in app.ini to 9090",
     lambda ws, a: None if ini_value(ws, "app.ini", "server", "port") == "9090"
     and ini_value(ws, "app.ini", "db", "name") == "shop" else "app.ini is %r" % read(ws, "app.ini")),
    ("fix-test-run", "tune", {"stack.py": STACK, "test_stack.py": TEST_STACK},
     "python3 test_stack.py fails. Fix stack.py so that the test passes.",
     lambda ws, a: prints(ws, "ok", "python3", "test_stack.py")
     or (None if read(ws, "test_stack.py") == TEST_STACK else "test_stack.py was changed")),
    ("json-nested-value", "held",
     {"config/app.json": '{"db": {"host": "localhost", "port": 5432}, "cache": {"ttl": 60}}\n'},
     "What port does the database use?",
     lambda ws, a: None if has(a, "5432") else "answer lacks 5432"),
    ("find-todo", "tune",
     {"src/a.py": "x = 1\n", "src/b.py": "# TODO: handle errors\ny = 2\n", "src/c.py": "z = 3\n"},
     "Which file has a TODO comment?",
     lambda ws, a: None if has(a, "b.py") and not has(a, "a.py") and not has(a, "c.py")
     else "answer is not b.py"),
    ("add-lower", "held", {"strings.py": "def upper(s):\n    return s.upper()\n"},
     "Add a function lower(s) to strings.py that returns s in lower case.",
     lambda ws, a: py_ok(ws, "from strings import lower, upper\n"
                         "assert lower('AbC') == 'abc' and upper('a') == 'A'", "strings.py")),
    ("multi-file-constant", "tune",
     {"main.py": "from config import LIMIT\n\nprint(LIMIT)\n", "config.py": "LIMIT = 10\n"},
     "Set LIMIT to 25.",
     lambda ws, a: prints(ws, "25", "python3", "main.py")),
    ("count-rows-deep", "held",
     {"data/2024/users.csv": "id,name\n1,ann\n2,bob\n3,cy\n4,dee\n"},
     "How many users are in the users CSV, not counting the header?",
     lambda ws, a: None if re.search(r"\b4\b", a) else "answer lacks 4"),
    ("gitignore-add", "tune", {".gitignore": "__pycache__/\n"},
     "Add *.log to .gitignore",
     lambda ws, a: None if set((read(ws, ".gitignore") or "").split()) == {"__pycache__/", "*.log"}
     else ".gitignore is %r" % read(ws, ".gitignore")),
    ("fix-syntax", "held",
     {"greet.py": "def hi(name)\n    return 'hi ' + name\n\n\nprint(hi('bo'))\n"},
     "greet.py has a syntax error. Fix it.",
     lambda ws, a: prints(ws, "hi bo", "python3", "greet.py")),
    ("word-count", "tune", {"poem.txt": "roses are red\nviolets are blue\n"},
     "How many words are in poem.txt?",
     lambda ws, a: None if re.search(r"\b6\b|\bsix\b", a, re.I) else "answer lacks 6"),
    ("json-add-script", "held",
     {"package.json": '{\n  "name": "web",\n  "scripts": {\n    "start": "node index.js"\n  }\n}\n'},
     "Add a test script to package.json that runs node test.js",
     lambda ws, a: None if json_path(ws, "package.json", "scripts", "test") == "node test.js"
     and json_path(ws, "package.json", "scripts", "start") == "node index.js"
     else "package.json is %r" % read(ws, "package.json")),
    ("default-argument", "tune", {"greet.py": GREET},
     "Make the name argument of greet default to 'world'.",
     lambda ws, a: py_ok(ws, "from greet import greet\n"
                         "assert greet() == 'Hello, world' and greet('x') == 'Hello, x'", "greet.py")),
    ("which-helper", "held",
     {"main.py": "from helpers import load\n\nload('x')\n",
      "helpers.py": "def load(p):\n    return open(p).read()\n\n\ndef save(p, t):\n    open(p, 'w').write(t)\n"},
     "Which function from helpers.py does main.py use?",
     lambda ws, a: None if has(a, "load") else "answer lacks load"),
    # The third set: everyday shapes over several files, nested structured files, fixes
    # checked by running, answers deeper in the tree. Halves drawn by a seeded shuffle.
    ("config-flag", "tune",
     {"settings.json": '{\n  "server": {\n    "host": "localhost",\n    "port": 8000\n  },\n'
                       '  "debug": false\n}\n'},
     "Turn on debug in settings.json.",
     lambda ws, a: None if json_path(ws, "settings.json", "debug") is True
     and json_path(ws, "settings.json", "server", "port") == 8000
     else "settings.json is %r" % read(ws, "settings.json")),
    ("fix-crash-run", "held",
     {"main.py": "prices = {'apple': 3, 'pear': 4}\n\ntotal = 0\n"
                 "for name in ['apple', 'pear', 'plum']:\n    total += prices[name]\nprint(total)\n"},
     "python3 main.py crashes with a KeyError. Make it skip fruits that have no price.",
     lambda ws, a: prints(ws, "7", "python3", "main.py")),
    ("two-file-version", "tune",
     {"package.json": '{\n  "name": "web",\n  "version": "1.2.0"\n}\n', "VERSION": "1.2.0\n"},
     "Bump the version to 1.3.0 in package.json and VERSION.",
     lambda ws, a: None if json_path(ws, "package.json", "version") == "1.3.0"
     and json_path(ws, "package.json", "name") == "web"
     and (read(ws, "VERSION") or "").strip() == "1.3.0"
     else "package.json is %r, VERSION is %r" % (read(ws, "package.json"), read(ws, "VERSION"))),
    ("json-rename-key", "tune", {"user.json": '{\n  "user_name": "ann",\n  "age": 30\n}\n'},
     "Rename the key user_name to username in user.json.",
     lambda ws, a: None if json_path(ws, "user.json", "username") == "ann"
     and json_path(ws, "user.json", "age") == 30 and json_path(ws, "user.json", "user_name") is None
     else "user.json is %r" % read(ws, "user.json")),
    ("env-add-var", "held", {".env.example": "DB_URL=\nSECRET=\n"},
     "Add a LOG_LEVEL variable to .env.example.",
     lambda ws, a: None if [l.split("=")[0] for l in (read(ws, ".env.example") or "").split()]
     == ["DB_URL", "SECRET", "LOG_LEVEL"] else ".env.example is %r" % read(ws, ".env.example")),
    ("import-fix", "held",
     {"mathutils.py": "def double(x):\n    return x * 2\n",
      "main.py": "from mathutil import double\n\nprint(double(21))\n"},
     "main.py fails with ModuleNotFoundError. Fix the import.",
     lambda ws, a: file_is(ws, "mathutils.py", "def double(x):\n    return x * 2\n")
     or prints(ws, "42", "python3", "main.py")),
    ("which-test", "held",
     {"tests/test_login.py": "def test_login():\n    assert True\n",
      "tests/test_cart.py": "def test_cart_total():\n    assert True\n",
      "app/cart.py": "def total(items):\n    return sum(items)\n"},
     "Which test file covers the cart?",
     lambda ws, a: None if "test_cart" in a and "test_login" not in a else "answer is not test_cart.py"),
    ("yaml-list-add", "tune", {"ci.yml": "steps:\n  - lint\n  - test\n"},
     "Add a build step after test in ci.yml.",
     lambda ws, a: None if [l.strip() for l in (read(ws, "ci.yml") or "").splitlines() if l.strip()]
     == ["steps:", "- lint", "- test", "- build"] else "ci.yml is %r" % read(ws, "ci.yml")),
]
QUESTIONS |= {"nested-constant", "json-nested-value", "find-todo", "count-rows-deep",
              "word-count", "which-helper",
              "which-test"}
