"""The cases of the differential test (parity.py): tool calls on generated workspaces.

cases() returns a list of {id, tool, params, setup}: setup is the workspace as a list of
operations (see build()), params the call's arguments. Hand-written cases cover each behaviour of each tool (the root causes of issue 17
among them); seeded random ones add breadth. Deterministic for a given day: modification
times are relative to now, so gemini-cli's "last 24 hours first" rule sees the same ages.
"""
import json
import os
import random
import time

NOW = int(time.time())
DAY = 86400


def put(path, data, age=None):
    """A file (bytes, or text as UTF-8), parents made, mtime = now - age (seconds)."""
    return [("file", path, data.encode() if isinstance(data, str) else data, age)]


def link(target, path, age=None):
    return [("link", path, target, age)]


def mkdir(*paths):
    return [("dir", p) for p in paths]


def fifo(path):
    return [("fifo", path)]


def sparse(path, size):
    return [("sparse", path, size)]


def sh(*parts):
    """The operations of several parts, in order."""
    return [op for part in parts for op in part]


def build(root, ops):
    """Makes the workspace ops describe below root (which is made)."""
    os.makedirs(root, exist_ok=True)
    for op in ops:
        path = os.path.join(root, op[1])
        if op[0] != "dir":
            os.makedirs(os.path.dirname(path), exist_ok=True)
        if op[0] == "file":
            with open(path, "wb") as f:
                f.write(op[2])
        elif op[0] == "link":
            os.symlink(op[2], path)
        elif op[0] == "dir":
            os.makedirs(path, exist_ok=True)
        elif op[0] == "fifo":
            os.mkfifo(path)
        elif op[0] == "sparse":
            with open(path, "wb") as f:
                f.truncate(op[2])
        if op[0] in ("file", "link") and op[3] is not None:
            os.utime(path, (NOW - op[3], NOW - op[3]), follow_symlinks=False)


GIT = mkdir(".git")  # a repository as gemini-cli and rg detect one (git itself is not needed)


class Cases:
    def __init__(self):
        self.list = []
        self.n = {}

    def add(self, tool, params, setup="", name=None):
        k = self.n.get(tool, 0) + 1
        self.n[tool] = k
        cid = "%s-%03d%s" % (tool, k, "-" + name if name else "")
        self.list.append({"id": cid, "tool": tool, "params": params, "setup": setup or []})


# A small project used by several tools.
PROJECT = sh(
    put("README.md", "# Demo\n\nA tiny project.\n", 5 * DAY),
    put("src/main.c", "#include <stdio.h>\n\nint main(void)\n{\n\tputs(\"hello\");\n\treturn 0;\n}\n", 4 * DAY),
    put("src/util.c", "int add(int a, int b)\n{\n\treturn a + b;\n}\n\nint sub(int a, int b)\n{\n\treturn a - b;\n}\n", 3 * DAY),
    put("src/util.h", "int add(int a, int b);\nint sub(int a, int b);\n", 3 * DAY + 60),
    put("docs/guide.md", "Guide\n=====\n\nRun `make`.\nThen run `make test`.\n", 2 * DAY),
    put("docs/notes.txt", "TODO: write more\nFIXME later\ntodo lower\n", 3600),
    put("tests/test_util.py", "def test_add():\n    assert add(1, 2) == 3\n", 7200),
    put(".hidden", "secret-ish\n", 10 * DAY),
    put("Makefile", "all:\n\tcc -o demo src/main.c src/util.c\n", 6 * DAY),
)

IGNORES = sh(
    GIT,
    put(".gitignore", "*.log\nbuild/\n/out.txt\n!keep.log\n", 9 * DAY),
    put(".geminiignore", "secret*\n", 9 * DAY),
    put("a.txt", "alpha x\n", 8 * DAY),
    put("debug.log", "log x\n", 8 * DAY),
    put("keep.log", "kept x\n", 8 * DAY),
    put("build/o.txt", "built x\n", 8 * DAY),
    put("out.txt", "out x\n", 8 * DAY),
    put("sub/out.txt", "sub out x\n", 8 * DAY),
    put("secret.txt", "secret x\n", 8 * DAY),
    put("src/x.c", "int x;\n", 8 * DAY),
)

LINKS = sh(
    put("real/a.txt", "target a\n", 8 * DAY),
    put("real/b.md", "target b\n", 8 * DAY),
    link("real/a.txt", "link-a.txt", 8 * DAY),
    link("real", "linkdir", 8 * DAY),
    link("nowhere", "dangling.txt", 8 * DAY),
    link("../outside-nothing", "up.txt", 8 * DAY),
)


def read_file(c):
    t = "read_file"
    c.add(t, {"file_path": "a.txt"}, put("a.txt", "one\ntwo\nthree"), "no-final-newline")
    c.add(t, {"file_path": "a.txt"}, put("a.txt", "one\ntwo\nthree\n"), "final-newline")
    c.add(t, {"file_path": "a.txt"}, put("a.txt", ""), "empty")
    c.add(t, {"file_path": "a.txt"}, put("a.txt", "\n"), "one-newline")
    c.add(t, {"file_path": "a.txt"}, put("a.txt", "x\r\ny\r\nz\r\n"), "crlf")
    c.add(t, {"file_path": "a.txt"}, put("a.txt", "x\ry\rz"), "cr-only")
    c.add(t, {"file_path": "a.txt", "start_line": 2, "end_line": 3}, put("a.txt", "1\n2\n3\n4\n5\n"), "window")
    c.add(t, {"file_path": "a.txt", "start_line": 4}, put("a.txt", "1\n2\n3\n4\n5\n"), "start-only")
    c.add(t, {"file_path": "a.txt", "end_line": 2}, put("a.txt", "1\n2\n3\n4\n5\n"), "end-only")
    c.add(t, {"file_path": "a.txt", "start_line": 10}, put("a.txt", "1\n2\n3\n"), "beyond-eof")
    c.add(t, {"file_path": "a.txt", "start_line": 1, "end_line": 99}, put("a.txt", "1\n2\n3"), "end-beyond")
    c.add(t, {"file_path": "a.txt", "start_line": 3, "end_line": 2}, put("a.txt", "1\n2\n3\n"), "start-after-end")
    c.add(t, {"file_path": "a.txt", "start_line": 0}, put("a.txt", "1\n"), "start-zero")
    c.add(t, {"file_path": "a.txt", "end_line": -1}, put("a.txt", "1\n"), "end-negative")
    c.add(t, {"file_path": "a.txt", "start_line": 1.5}, put("a.txt", "1\n"), "start-fraction")
    c.add(t, {"file_path": "big.txt"}, put("big.txt", "".join("line %d\n" % i for i in range(1, 2601))), "over-2000-lines")
    c.add(t, {"file_path": "big.txt", "start_line": 1990, "end_line": 2010},
          put("big.txt", "".join("line %d\n" % i for i in range(1, 2601))), "window-in-big")
    c.add(t, {"file_path": "long.txt"}, put("long.txt", "short\n" + "x" * 2500 + "\nend\n"), "long-line")
    c.add(t, {"file_path": "long.txt"}, put("long.txt", "é" * 2100 + "\n"), "long-line-multibyte")
    c.add(t, {"file_path": "long.txt"}, put("long.txt", "😀" * 1500 + "\n"), "long-line-astral")
    c.add(t, {"file_path": "bom.txt"}, put("bom.txt", b"\xef\xbb\xbfwith bom\nline 2\n"), "utf8-bom")
    c.add(t, {"file_path": "u16.txt"}, put("u16.txt", b"\xff\xfe" + "héllo\nwörld\n".encode("utf-16-le")), "utf16le")
    c.add(t, {"file_path": "u16.txt"}, put("u16.txt", b"\xfe\xff" + "big endian\n".encode("utf-16-be")), "utf16be")
    c.add(t, {"file_path": "u32.txt"}, put("u32.txt", b"\xff\xfe\x00\x00" + "thirty-two\n".encode("utf-32-le")), "utf32le")
    c.add(t, {"file_path": "latin.txt"}, put("latin.txt", b"caf\xe9 cr\xe8me\n"), "latin1")
    c.add(t, {"file_path": "ctl.txt"}, put("ctl.txt", b"bell\x07 esc\x1b[0m tab\t\n"), "control-chars")
    c.add(t, {"file_path": "nul.txt"}, put("nul.txt", b"text\x00more\n"), "nul-content")
    c.add(t, {"file_path": "prog.exe"}, put("prog.exe", "plain text really\n"), "binary-ext")
    c.add(t, {"file_path": "data.DAT"}, put("data.DAT", "text\n"), "binary-ext-upper")
    c.add(t, {"file_path": "main.ts"}, put("main.ts", "const x: number = 1;\n"), "typescript")
    c.add(t, {"file_path": "pic.svg"}, put("pic.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n"), "svg")
    c.add(t, {"file_path": "sub/deep/f.txt"}, put("sub/deep/f.txt", "deep\n"), "nested")
    c.add(t, {"file_path": "./sub/../sub/f.txt"}, put("sub/f.txt", "dots\n"), "dot-segments")
    c.add(t, {"file_path": "@a.txt"}, put("a.txt", "at\n"), "at-prefix")
    c.add(t, {"file_path": "@a.txt"}, put("a.txt", "plain\n") + put("@a.txt", "literal at\n"), "at-literal")
    c.add(t, {"file_path": "nope.txt"}, [], "missing")
    c.add(t, {"file_path": "sub/nope.txt"}, mkdir("sub"), "missing-in-dir")
    c.add(t, {"file_path": "sub"}, mkdir("sub"), "directory")
    c.add(t, {"file_path": ""}, [], "empty-path")
    c.add(t, {"file_path": "   "}, [], "blank-path")
    c.add(t, {}, [], "no-path")
    c.add(t, {"file_path": 7}, [], "path-number")
    c.add(t, {"file_path": "a\nb"}, [], "newline-in-path")
    c.add(t, {"file_path": "link-a.txt"}, LINKS, "symlink")
    c.add(t, {"file_path": "dangling.txt"}, LINKS, "dangling-symlink")
    c.add(t, {"file_path": "linkdir/b.md"}, LINKS, "through-dir-symlink")
    c.add(t, {"file_path": "debug.log"}, IGNORES, "gitignored")
    c.add(t, {"file_path": "keep.log"}, IGNORES, "gitignore-negated")
    c.add(t, {"file_path": "secret.txt"}, IGNORES, "geminiignored")
    c.add(t, {"file_path": "build/o.txt"}, IGNORES, "ignored-dir")
    c.add(t, {"file_path": "sub/out.txt"}, IGNORES, "anchored-rule-elsewhere")
    c.add(t, {"file_path": "debug.log"}, IGNORES[1:], "gitignore-without-repo")
    c.add(t, {"file_path": "huge.bin.txt"}, sparse("huge.bin.txt", 21 << 20), "over-20mb")
    c.add(t, {"file_path": "src/util.c", "start_line": 5}, PROJECT, "project-window")
    c.add(t, {"file_path": "a.txt", "start_line": 2, "end_line": 2}, put("a.txt", "x\r\ny\r\n"), "crlf-window")
    c.add(t, {"file_path": "a.txt", "start_line": None}, put("a.txt", "x\n"), "null-param")
    c.add(t, {"file_path": "<WS>/src/util.c", "start_line": 2, "end_line": 4}, PROJECT, "absolute")
    c.add(t, {"file_path": "<WS>/src/../README.md"}, PROJECT, "absolute-dots")
    c.add(t, {"file_path": "a%20b.txt"}, put("a b.txt", "decoded\n") + put("a%20b.txt", "literal\n"), "percent-escape")
    c.add(t, {"file_path": "loop"}, link("loop", "loop"), "symlink-loop")
    # deliberate differences (README): media inline, no workspace confinement, UTF-16 halves
    c.add(t, {"file_path": "p.png"}, put("p.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "image")
    c.add(t, {"file_path": "d.pdf"}, put("d.pdf", "%PDF-1.4\n%\xe2\xe3\n1 0 obj\n"), "pdf")
    c.add(t, {"file_path": "/etc/os-release"}, [], "outside-workspace")
    c.add(t, {"file_path": "half.txt"}, put("half.txt", "x" + "😀" * 1000 + "\n"), "cut-in-a-pair")
    # images, PDF, audio and video as inline data (the window is ignored), SVG as text
    c.add(t, {"file_path": "q.jpg", "start_line": 2}, put("q.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(256))), "jpeg")
    c.add(t, {"file_path": "g.GIF"}, put("g.GIF", b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"), "gif-upper")
    c.add(t, {"file_path": "w.webp"}, put("w.webp", b"RIFF\x1a\x00\x00\x00WEBPVP8 " + bytes(16)), "webp")
    c.add(t, {"file_path": "t.png"}, put("t.png", "not really an image\n"), "image-text-content")
    c.add(t, {"file_path": "e.png"}, put("e.png", b""), "image-empty")
    c.add(t, {"file_path": "i.ico"}, put("i.ico", b"\x00\x00\x01\x00" + bytes(range(64))), "ico-not-in-mime-lite")
    c.add(t, {"file_path": "b.bmp"}, put("b.bmp", b"BM" + bytes(range(64))), "bmp")
    c.add(t, {"file_path": "v.svg"}, put("v.svg", '<svg xmlns="http://www.w3.org/2000/svg"/>\n'), "svg-text")
    c.add(t, {"file_path": "z.svgz"}, put("z.svgz", b"\x1f\x8b\x08\x00" + bytes(32)), "svgz-inline")
    c.add(t, {"file_path": "s.mp3"}, put("s.mp3", b"ID3\x03\x00\x00\x00\x00\x00\x00" + bytes(range(256))), "mp3")
    c.add(t, {"file_path": "s.wav"}, put("s.wav", b"RIFF$\x00\x00\x00WAVEfmt " + bytes(range(64))), "wav")
    c.add(t, {"file_path": "s.flac"}, put("s.flac", b"fLaC\x00\x00\x00\x22" + bytes(range(64))), "flac-by-extension")
    c.add(t, {"file_path": "s.aif"}, put("s.aif", b"FORM\x00\x00\x00\x00AIFF" + bytes(range(64))), "aiff")
    c.add(t, {"file_path": "s.ogg"}, put("s.ogg", b"OggS\x00\x02" + bytes(range(64))), "ogg")
    c.add(t, {"file_path": "s.m4a"}, put("s.m4a", b"\x00\x00\x00\x20ftypM4A " + bytes(range(64))), "audio-unsupported")
    c.add(t, {"file_path": "s.mp3"}, put("s.mp3", "a text file named .mp3\n"), "audio-text-content")
    c.add(t, {"file_path": "m.mp4"}, put("m.mp4", b"\x00\x00\x00\x18ftypmp42" + bytes(range(64))), "video")
    c.add(t, {"file_path": "x.ts"}, put("x.ts", b"G\x40\x00\x10" + bytes(range(64))), "ts-is-text")
    c.add(t, {"file_path": "big.pdf"}, put("big.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 400), "pdf-larger")


def list_directory(c):
    t = "list_directory"
    c.add(t, {"dir_path": "."}, PROJECT, "project")
    c.add(t, {"dir_path": "src"}, PROJECT, "subdir")
    c.add(t, {"dir_path": "<WS>/src"}, PROJECT, "absolute")
    c.add(t, {"dir_path": "<WS>"}, IGNORES, "absolute-root")
    names = ["_x.txt", ".hidden", "10.txt", "9.txt", "a.txt", "B.txt", "é.txt", "Z.txt", "ab", "aB", "Ab", "a-b", "a_b"]
    c.add(t, {"dir_path": "."}, sh(*[put(n, n) for n in names], mkdir("adir", "Dir2")), "icu-order")
    c.add(t, {"dir_path": "e"}, mkdir("e"), "empty")
    exotic = ["ß", "ss", "Ss", "æ", "ae", "ð", "þ", "z", "Ω", "ω", "ς", "σ", "ł", "ø", "œ", "ĳ", "я", "ё",
              "ſ", "ı", "İ", "…", "—x", "«q»", "©", "€1", "😀", "🎉", "中", "ǎ", "a b", "a.b", "a!b"]
    c.add(t, {"dir_path": "."}, sh(*[put(n, n) for n in exotic], mkdir("Ω-dir", "ä-dir")), "icu-exotic")
    c.add(t, {"dir_path": "."}, sh(put("a.txt", "a"), put("b.md", "bb"), put("c.txt", "ccc")), "sizes")
    c.add(t, {"dir_path": ".", "ignore": ["*.txt"]}, sh(put("a.txt", "a"), put("b.md", "bb"), put("c.txt", "ccc")), "ignore-star")
    c.add(t, {"dir_path": ".", "ignore": ["?.md"]}, sh(put("a.md", "a"), put("bb.md", "bb"), put("é.md", "c")), "ignore-question")
    c.add(t, {"dir_path": ".", "ignore": ["*"]}, sh(put("a.txt", "a")), "all-ignored-param")
    c.add(t, {"dir_path": ".", "ignore": ["[ab].txt", "a+b"]}, sh(put("a.txt", "a"), put("[ab].txt", "b"), put("a+b", "c")), "ignore-literal-specials")
    c.add(t, {"dir_path": "."}, IGNORES, "ignore-files")
    c.add(t, {"dir_path": ".", "file_filtering_options": {"respect_git_ignore": False}}, IGNORES, "no-git-ignore")
    c.add(t, {"dir_path": ".", "file_filtering_options": {"respect_gemini_ignore": False}}, IGNORES, "no-gemini-ignore")
    c.add(t, {"dir_path": ".", "file_filtering_options": {"respect_git_ignore": False, "respect_gemini_ignore": False}}, IGNORES, "no-ignores")
    c.add(t, {"dir_path": "build"}, IGNORES, "ignored-dir-listed")
    c.add(t, {"dir_path": "."}, LINKS, "symlinks")
    c.add(t, {"dir_path": "linkdir"}, LINKS, "through-symlink")
    c.add(t, {"dir_path": "."}, sh(mkdir(".git", "node_modules/x"), put(".env", "K=V"), put("a.txt", "a")), "blocked-segments")
    c.add(t, {"dir_path": "nope"}, [], "missing")
    c.add(t, {"dir_path": "f.txt"}, put("f.txt", "x"), "file")
    c.add(t, {"dir_path": ""}, put("f.txt", "x"), "empty-path")
    c.add(t, {}, [], "no-path")
    c.add(t, {"dir_path": ".", "ignore": "x"}, [], "ignore-not-array")
    c.add(t, {"dir_path": ".", "ignore": [3]}, [], "ignore-item-number")


def glob(c):
    t = "glob"
    c.add(t, {"pattern": "**/*.c"}, PROJECT, "c-files")
    c.add(t, {"pattern": "**/*"}, PROJECT, "everything")
    c.add(t, {"pattern": "*.md"}, PROJECT, "top-level")
    c.add(t, {"pattern": "**/*.{c,h}"}, PROJECT, "braces")
    c.add(t, {"pattern": "**/*.C"}, PROJECT, "case-insensitive")
    c.add(t, {"pattern": "**/*.C", "case_sensitive": True}, PROJECT, "case-sensitive")
    c.add(t, {"pattern": "**/*.c", "case_sensitive": False}, PROJECT, "case-false")
    c.add(t, {"pattern": "*.c", "dir_path": "src"}, PROJECT, "dir-path")
    c.add(t, {"pattern": "**/*.h", "dir_path": "<WS>"}, PROJECT, "dir-path-absolute")
    c.add(t, {"pattern": "<WS>/src/*.c"}, PROJECT, "absolute-pattern")
    c.add(t, {"pattern": "**/*.nothing"}, PROJECT, "none")
    c.add(t, {"pattern": "**/*.c", "dir_path": "nope"}, PROJECT, "missing-dir")
    c.add(t, {"pattern": "*", "dir_path": "README.md"}, PROJECT, "dir-is-file")
    c.add(t, {"pattern": ""}, PROJECT, "empty-pattern")
    c.add(t, {"pattern": "   "}, PROJECT, "blank-pattern")
    c.add(t, {}, PROJECT, "no-pattern")
    c.add(t, {"pattern": "src/[mu]*.c"}, PROJECT, "class")
    c.add(t, {"pattern": "?.txt"}, sh(put("a.txt", "a", DAY * 3), put("é.txt", "e", DAY * 3), put("ab.txt", "x", DAY * 3), put("😀.txt", "s", DAY * 3)), "question-unicode")
    c.add(t, {"pattern": "[x].txt"}, sh(put("[x].txt", "lit", DAY * 2), put("x.txt", "x", DAY * 2)), "literal-brackets")
    c.add(t, {"pattern": "**/*.txt"}, sh(*[put("f%d.txt" % i, "x", DAY * 2 + i * 60) for i in range(5)], *[put("new%d.txt" % i, "x", 60 + i * 60) for i in range(3)]), "recent-then-path")
    c.add(t, {"pattern": "**/*"}, LINKS, "symlinks")
    c.add(t, {"pattern": "**/*.txt"}, LINKS, "symlinks-txt")
    c.add(t, {"pattern": "**/*"}, sh(put("node_modules/m.js", "m", DAY * 2), put(".git/config", "g", DAY * 2), put("bower_components/b.js", "b", DAY * 2), put("dist/d.js", "d", DAY * 2), put("build/b.js", "b", DAY * 2), put("a.js", "a", DAY * 2)), "default-excludes")
    c.add(t, {"pattern": "**/*"}, IGNORES, "ignore-files")
    c.add(t, {"pattern": "**/*", "respect_git_ignore": False}, IGNORES, "respect-git-false")
    c.add(t, {"pattern": "**/*", "respect_gemini_ignore": False}, IGNORES, "respect-gemini-false")
    c.add(t, {"pattern": "**/*", "respect_git_ignore": False, "respect_gemini_ignore": False}, IGNORES, "respect-both-false")
    c.add(t, {"pattern": "*.log"}, IGNORES, "all-ignored")
    c.add(t, {"pattern": "**/.*"}, PROJECT, "dotfiles")
    c.add(t, {"pattern": "src"}, PROJECT, "directory-name")
    c.add(t, {"pattern": 5}, PROJECT, "pattern-number")
    c.add(t, {"pattern": "**/*.c", "case_sensitive": "yes"}, PROJECT, "bool-as-string")


def grep_search(c):
    t = "grep_search"
    c.add(t, {"pattern": "return"}, PROJECT, "basic")
    c.add(t, {"pattern": "RETURN"}, PROJECT, "case-insensitive")
    c.add(t, {"pattern": "RETURN", "case_sensitive": True}, PROJECT, "case-sensitive")
    c.add(t, {"pattern": "todo"}, PROJECT, "auto-context-2")
    c.add(t, {"pattern": "puts"}, PROJECT, "auto-context-1")
    c.add(t, {"pattern": "int"}, PROJECT, "many")
    c.add(t, {"pattern": "a + b", "fixed_strings": True}, PROJECT, "fixed")
    c.add(t, {"pattern": "a + b"}, PROJECT, "regex-plus")
    c.add(t, {"pattern": "int", "include_pattern": "*.h"}, PROJECT, "include")
    c.add(t, {"pattern": "int", "exclude_pattern": "sub"}, PROJECT, "exclude")
    c.add(t, {"pattern": "int", "names_only": True}, PROJECT, "names-only")
    c.add(t, {"pattern": "return", "context": 1}, PROJECT, "context")
    c.add(t, {"pattern": "return", "before": 2}, PROJECT, "before")
    c.add(t, {"pattern": "return", "after": 1}, PROJECT, "after")
    # rg's file order is its threads' (parity.py sorts the blocks): a limit that cuts across
    # files would pick different files from run to run, so these search one file
    c.add(t, {"pattern": "int", "max_matches_per_file": 2}, PROJECT, "per-file")
    c.add(t, {"pattern": "a", "total_max_matches": 3, "dir_path": "src/util.c"}, PROJECT, "total-limit")
    c.add(t, {"pattern": "a", "total_max_matches": 3, "names_only": True, "dir_path": "docs"}, PROJECT, "total-limit-names")
    c.add(t, {"pattern": "x", "dir_path": "p"}, fifo("p"), "fifo-dir-path")
    c.add(t, {"pattern": "int", "total_max_matches": 0}, PROJECT, "total-zero")
    c.add(t, {"pattern": "int", "max_matches_per_file": 0}, PROJECT, "per-file-zero")
    c.add(t, {"pattern": "zzzz"}, PROJECT, "no-match")
    c.add(t, {"pattern": "zzzz", "include_pattern": "*.c"}, PROJECT, "no-match-filter")
    c.add(t, {"pattern": "return", "dir_path": "src"}, PROJECT, "dir-path")
    c.add(t, {"pattern": "return", "dir_path": "<WS>/src"}, PROJECT, "dir-path-absolute")
    c.add(t, {"pattern": "x", "dir_path": "<WS>"}, IGNORES, "dir-path-root")
    c.add(t, {"pattern": "return", "dir_path": "src/util.c"}, PROJECT, "file-path")
    c.add(t, {"pattern": "x", "dir_path": "nope"}, PROJECT, "missing-path")
    c.add(t, {"pattern": ""}, PROJECT, "empty-pattern")
    c.add(t, {}, PROJECT, "no-pattern")
    for i, bad in enumerate(["(", "[a", "a{2,1}", "*x", "a)", "(?<n>a)(?<n>b)", "\\", "x**", "[z-a]", "(?P<n>x)",
                             "(?<=a)*", "\\k<zz>(?<n>a)", "(?<1>a)", "(?i)x", "^*", "a{1,2}{3}"]):
        c.add(t, {"pattern": bad}, PROJECT, "bad-regex-%d" % i)
    c.add(t, {"pattern": "int", "exclude_pattern": "("}, PROJECT, "bad-exclude")
    c.add(t, {"pattern": "\\bsub\\b"}, PROJECT, "word-boundary")
    c.add(t, {"pattern": "^int"}, PROJECT, "anchor")
    c.add(t, {"pattern": "x"}, IGNORES, "ignore-files")
    c.add(t, {"pattern": "x", "no_ignore": True}, IGNORES, "no-ignore")
    c.add(t, {"pattern": "target"}, LINKS, "symlinks")
    c.add(t, {"pattern": "d"}, sh(put("dist/a.js", "d\n"), put("build/b.js", "d\n"), put("coverage/c.js", "d\n"), put("x.log", "d\n"), put("y.tmp", "d\n"), put("ok.js", "d\n"), put("__pycache__/p.py", "d\n"), put(".vscode/s.json", "d\n")), "default-excludes")
    c.add(t, {"pattern": "é"}, sh(put("u.txt", "café\nCAFÉ\n")), "unicode")
    c.add(t, {"pattern": "x"}, put("long.txt", "x" * 2500 + "\n"), "long-line")
    c.add(t, {"pattern": "needle"}, put("a.txt", "".join("hay %d\n" % i for i in range(100)) + "needle\n" + "".join("hay %d\n" % i for i in range(100))), "context-50")
    c.add(t, {"pattern": "n[ae]"}, put("a.txt", "".join(("na\n" if i % 7 == 0 else "ne\n" if i % 11 == 0 else "zz\n") for i in range(60))), "context-15")
    c.add(t, {"pattern": "x", "dir_path": "."}, sh(put("b.txt", "x\n"), put("a.txt", "x\n"), put("c/d.txt", "x\n")), "file-order")
    c.add(t, {"pattern": "search_file", "include_pattern": "src/**"}, sh(put("src/a/x.py", "search_file\n"), put("other/y.py", "search_file\n")), "include-dir")
    c.add(t, {"pattern": "a", "context": "2"}, PROJECT, "context-string")
    c.add(t, {"pattern": "(a)\\1"}, put("a.txt", "aa\n"), "pcre2-backreference")
    c.add(t, {"pattern": "search_file", "dir_path": "src", "include_pattern": "src/**"}, sh(put("src/a/x.py", "search_file\n"), put("src/y.py", "search_file\n")), "include-dir-below")
    c.add(t, {"pattern": "search_file", "dir_path": "src", "include_pattern": "a/*.py"}, sh(put("src/a/x.py", "search_file\n"), put("src/y.py", "search_file\n")), "include-relative-to-dir")
    c.add(t, {"pattern": "x", "include_pattern": "**/*.{c,h}"}, sh(put("a.c", "x\n"), put("b.h", "x\n"), put("c.txt", "x\n")), "include-braces")
    c.add(t, {"pattern": "x", "include_pattern": "!*.c"}, sh(put("a.c", "x\n"), put("b.h", "x\n")), "include-negated")
    c.add(t, {"pattern": "x", "dir_path": "a.c", "include_pattern": "*.h"}, sh(put("a.c", "x\n"), put("b.h", "x\n")), "include-vs-file-path")
    c.add(t, {"pattern": "x", "include_pattern": "sub/"}, sh(put("sub/a.c", "x\n"), put("b.h", "x\n")), "include-trailing-slash")


def write_file(c):
    t = "write_file"
    c.add(t, {"file_path": "new.txt", "content": "hello\nworld\n"}, [], "create")
    c.add(t, {"file_path": "<WS>/abs/new.txt", "content": "absolute\n"}, [], "absolute")
    c.add(t, {"file_path": "new.txt", "content": "no newline"}, [], "create-no-newline")
    c.add(t, {"file_path": "a/b/c.txt", "content": "deep\n"}, [], "create-parents")
    c.add(t, {"file_path": "e.txt", "content": ""}, [], "create-empty")
    c.add(t, {"file_path": "f.txt", "content": "one\nTWO\nthree\n"}, put("f.txt", "one\ntwo\nthree\n"), "overwrite")
    c.add(t, {"file_path": "f.txt", "content": "".join("l%d\n" % i for i in range(30)).replace("l15", "CHANGED")}, put("f.txt", "".join("l%d\n" % i for i in range(30))), "overwrite-snippet")
    c.add(t, {"file_path": "f.txt", "content": "a\nb\n"}, put("f.txt", "x\r\ny\r\n"), "crlf-existing")
    c.add(t, {"file_path": "f.txt", "content": "a\r\nb\n"}, [], "crlf-new")
    c.add(t, {"file_path": "bom.txt", "content": "new text\n"}, put("bom.txt", b"\xef\xbb\xbfold text\n"), "bom-existing")
    c.add(t, {"file_path": "u16.txt", "content": "new\n"}, put("u16.txt", b"\xff\xfe" + "old\n".encode("utf-16-le")), "utf16-existing")
    c.add(t, {"file_path": "d", "content": "x"}, mkdir("d"), "directory")
    c.add(t, {"file_path": "", "content": "x"}, [], "empty-path")
    c.add(t, {"file_path": "x.txt"}, [], "no-content")
    c.add(t, {"content": "x"}, [], "no-path")
    c.add(t, {"file_path": "x.txt", "content": 5}, [], "content-number")
    c.add(t, {"file_path": "p.py", "content": "def f():\n    # rest of code ...\n"}, [], "placeholder")
    c.add(t, {"file_path": "same.txt", "content": "same\n"}, put("same.txt", "same\n"), "unchanged")
    c.add(t, {"file_path": "link-a.txt", "content": "via link\n"}, LINKS, "through-symlink")
    c.add(t, {"file_path": "u.txt", "content": "é😀\n"}, [], "unicode")
    c.add(t, {"file_path": "@at.txt", "content": "at\n"}, [], "at-prefix")


def replace(c):
    t = "replace"
    r = lambda p, o, n, **kw: dict({"file_path": p, "instruction": "change it", "old_string": o, "new_string": n}, **kw)
    base = put("f.txt", "alpha\nbeta\ngamma\nbeta\n")
    c.add(t, r("f.txt", "alpha", "ALPHA"), base, "exact")
    c.add(t, r("<WS>/f.txt", "gamma", "GAMMA"), base, "absolute")
    c.add(t, r("<WS>/util.c", "a + b", "b + a"), PROJECT, "absolute-no-correction")
    c.add(t, r("f.txt", "beta", "BETA"), base, "ambiguous")
    c.add(t, r("f.txt", "beta", "BETA", allow_multiple=True), base, "allow-multiple")
    c.add(t, r("f.txt", "delta", "x"), base, "no-match")
    c.add(t, r("f.txt", "alpha", "alpha"), base, "identical")
    c.add(t, r("new.txt", "", "created\n"), [], "create")
    c.add(t, r("d/e/new.txt", "", "created\n"), [], "create-parents")
    c.add(t, r("f.txt", "", "x"), base, "create-existing")
    c.add(t, r("nope.txt", "a", "b"), [], "missing")
    c.add(t, r("util.c", "a + b", "b + a"), PROJECT, "path-correction")
    c.add(t, r("util.c", "zzz", "b"), PROJECT, "path-correction-no-match")
    c.add(t, r("x.c", "int", "long"), sh(put("a/x.c", "int a;\n"), put("b/x.c", "int b;\n")), "path-ambiguous")
    c.add(t, r("main.c", "puts", "printf"), PROJECT, "path-correction-main")
    c.add(t, r("src", "a", "b"), PROJECT, "directory")
    c.add(t, r("bom.txt", "old", "new"), put("bom.txt", b"\xef\xbb\xbfold text\n"), "utf8-bom")
    c.add(t, r("u16.txt", "old", "new"), put("u16.txt", b"\xff\xfe" + "old text\n".encode("utf-16-le")), "utf16le")
    c.add(t, r("u16b.txt", "old", "new"), put("u16b.txt", b"\xfe\xff" + "old text\n".encode("utf-16-be")), "utf16be")
    c.add(t, r("w.txt", "y", "z"), put("w.txt", "x\r\ny\r\n"), "crlf")
    c.add(t, r("w.txt", "x\ny", "X\nY"), put("w.txt", "x\r\ny\r\nz\r\n"), "crlf-multiline")
    c.add(t, r("f.txt", "gamma\n", ""), base, "delete-line")
    c.add(t, r("f.txt", "beta", "BETA"), put("f.txt", "beta"), "no-final-newline")
    src = put("p.py", "def f(a, b):\n    if a:\n        return b\n    x = call(a, b)\n    return x\n")
    c.add(t, r("p.py", "if a:\n  return b", "if b:\n  return a"), src, "flexible")
    c.add(t, r("p.py", "x = call( a, b )", "x = call(b, a)"), src, "regex")
    c.add(t, r("p.py", "    x = cal(a, b)\n    return x", "    return 0"), src, "fuzzy")
    c.add(t, r("p.py", "return x", "# rest of code ...\nreturn x"), src, "placeholder")
    c.add(t, r("p.py", "    return x", "    return x  # unchanged code ..."), src, "placeholder-inline")
    c.add(t, r("", "a", "b"), [], "empty-path")
    c.add(t, {"file_path": "f.txt", "old_string": "a", "new_string": "b"}, base, "no-instruction")
    c.add(t, {"file_path": "f.txt", "instruction": "i", "new_string": "b"}, base, "no-old-string")
    c.add(t, r("f.txt", "alpha", 3), base, "new-number")
    c.add(t, r("latin.txt", "caf", "CAF"), put("latin.txt", b"caf\xe9\n"), "latin1")
    c.add(t, r("link-a.txt", "target", "TARGET"), LINKS, "through-symlink")
    c.add(t, r("f.txt", "$&", "x$1y"), put("f.txt", "a $& b\n"), "dollar-patterns")
    c.add(t, r("big.txt", "line 50\n", "LINE 50\n"), put("big.txt", "".join("line %d\n" % i for i in range(100))), "snippet")
    # max_matches_per_file over several files (rg --max-count per file), with context and
    # with the automatic context of a few matches
    c.add(t, {"pattern": "int", "max_matches_per_file": 1}, PROJECT, "per-file-each")
    c.add(t, {"pattern": "a", "max_matches_per_file": 1, "context": 1}, PROJECT, "per-file-context")
    c.add(t, {"pattern": "return", "max_matches_per_file": 1}, PROJECT, "per-file-auto-context")
    c.add(t, {"pattern": "x", "max_matches_per_file": 2, "after": 2}, put("f.txt", "x1\nx2\nx3\ny\nx4\nz\n"), "per-file-after")
    c.add(t, {"pattern": "x", "max_matches_per_file": 2, "before": 1}, put("f.txt", "a\nx1\nb\nx2\nx3\n"), "per-file-before")
    c.add(t, {"pattern": "x", "max_matches_per_file": 2, "names_only": True}, sh(put("a.txt", "x\nx\nx\n"), put("b.txt", "x\n")), "per-file-names")
    c.add(t, {"pattern": "x", "max_matches_per_file": 1, "exclude_pattern": "x1"}, put("f.txt", "x1\nx2\nx3\n"), "per-file-exclude")
    c.add(t, {"pattern": "x", "max_matches_per_file": 2, "total_max_matches": 3, "dir_path": "f.txt"}, put("f.txt", "x\nx\nx\nx\n"), "per-file-and-total")
    c.add(t, {"pattern": "x", "max_matches_per_file": "2"}, put("f.txt", "x\nx\nx\n"), "per-file-string")
    c.add(t, {"pattern": "x", "max_matches_per_file": 1.5}, put("f.txt", "x\nx\nx\n"), "per-file-fraction")
    c.add(t, {"pattern": "x", "max_matches_per_file": 1}, put("f.txt", "a\nx1\nb\nx2\nc\nx3\nd\n"), "per-file-auto-context-more")
    c.add(t, {"pattern": "x", "max_matches_per_file": 2}, sh(put("a.txt", "x1\ny\nx2\nx3\n"), put("b.txt", "q\nx\n")), "per-file-auto-context-two")
    c.add(t, {"pattern": "x", "max_matches_per_file": 1, "context": 3}, put("f.txt", "x1\nx2\nx3\nx4\nx5\n"), "per-file-context-matches")
    c.add(t, {"pattern": "x", "max_matches_per_file": 100}, put("f.txt", "x\n" * 5), "per-file-large")


def read_many_files(c):
    t = "read_many_files"
    c.add(t, {"include": ["src/*.c"]}, PROJECT, "glob")
    c.add(t, {"include": ["<WS>/src/util.c", "<WS>/docs/*.md"]}, PROJECT, "absolute")
    c.add(t, {"include": ["**/*.md", "Makefile"]}, PROJECT, "several")
    c.add(t, {"include": ["**/*"], "exclude": ["**/*.c", "docs/**"]}, PROJECT, "exclude")
    c.add(t, {"include": ["**/*.nothing"]}, PROJECT, "none")
    c.add(t, {"include": []}, PROJECT, "empty-include")
    c.add(t, {"include": [""]}, PROJECT, "empty-item")
    c.add(t, {}, PROJECT, "no-include")
    c.add(t, {"include": "src/*.c"}, PROJECT, "include-string")
    c.add(t, {"include": ["**/*"]}, sh(put("a.txt", "a\n"), put("B.txt", "b\n"), put("c.bin", "bin\n"), put("node_modules/m.js", "m\n"), put("dist/d.js", "d\n"), put(".env", "E=1\n")), "default-excludes")
    c.add(t, {"include": ["**/*"], "useDefaultExcludes": False}, sh(put("a.txt", "a\n"), put("c.bin", "bin\n"), put("dist/d.js", "d\n")), "no-default-excludes")
    c.add(t, {"include": ["*.dat", "*.txt"]}, sh(put("a.txt", "a\n"), put("b.dat", b"\x00\x01\x02"), put("c.txt", b"\x00x")), "binary")
    c.add(t, {"include": ["*"]}, sh(put("a.txt", "a\n"), put("p.png", b"\x89PNG\r\n\x1a\n"), put("d.pdf", "%PDF-1.4\n")), "assets-skipped")
    c.add(t, {"include": ["big.txt"]}, put("big.txt", "".join("l%d\n" % i for i in range(2500))), "truncated")
    c.add(t, {"include": ["*.txt"]}, sh(put("a.txt", "no newline"), put("b.txt", "")), "no-newline-and-empty")
    c.add(t, {"include": ["**/*"]}, IGNORES, "ignore-files")
    c.add(t, {"include": ["**/*"], "file_filtering_options": {"respect_git_ignore": False, "respect_gemini_ignore": False}}, IGNORES, "no-ignores")
    c.add(t, {"include": ["**/*"]}, LINKS, "symlinks")
    c.add(t, {"include": ["A.TXT"]}, put("a.txt", "case\n"), "case-insensitive")
    c.add(t, {"include": ["[x].txt"]}, sh(put("[x].txt", "lit\n"), put("x.txt", "x\n")), "literal-file")
    c.add(t, {"include": ["src"]}, PROJECT, "directory")
    c.add(t, {"include": ["*.mp3"]}, put("s.mp3", b"ID3\x03\x00\x00\x00\x00\x00\x00" + bytes(range(256))), "audio")
    # useDefaultExcludes false: the default list goes, the workspace's own rules stay
    c.add(t, {"include": ["**/*"], "useDefaultExcludes": False}, sh(put("a.txt", "a\n"), put("node_modules/m.js", "m\n"), put(".git/config", "g\n"), put(".env", "E=1\n"), put("GEMINI.md", "g\n"), put(".DS_Store", "d\n"), put("x.pyc", "p\n"), put("build/b.js", "b\n"), put("z.zip", "zip\n")), "no-default-excludes-all")
    c.add(t, {"include": ["**/*"], "useDefaultExcludes": False, "exclude": ["build/**"]}, sh(put("a.txt", "a\n"), put("build/b.js", "b\n"), put("dist/d.js", "d\n")), "no-default-excludes-own")
    c.add(t, {"include": ["**/*"], "useDefaultExcludes": False}, IGNORES, "no-default-excludes-ignores")
    c.add(t, {"include": ["**/*.bin", "**/*.DAT"], "useDefaultExcludes": False}, sh(put("c.bin", b"\x00\x01"), put("d.dat", "text\n")), "no-default-excludes-binary")
    c.add(t, {"include": ["sub/**"], "useDefaultExcludes": False}, sh(put("sub/.env", "E=1\n"), put("sub/node_modules/x.js", "x\n"), put("sub/.gitignore", "y\n"), put("sub/ok.txt", "ok\n")), "no-default-excludes-sub")
    c.add(t, {"include": ["**/*"], "useDefaultExcludes": "false"}, put("a.txt", "a\n"), "default-excludes-string")
    # media files in read_many_files: inline parts between the text parts when asked for
    MEDIA = sh(put("a.txt", "a\n"), put("p.png", b"\x89PNG\r\n\x1a\n" + bytes(range(32))), put("z.txt", "z\n"),
               put("d.pdf", b"%PDF-1.4\n" + bytes(range(32))), put("s.mp3", b"ID3\x03" + bytes(range(32))),
               put("m.mp4", b"\x00\x00\x00\x18ftypmp42" + bytes(range(32))))
    c.add(t, {"include": ["*.png", "*.txt"]}, MEDIA, "image-between-text")
    c.add(t, {"include": ["*"]}, MEDIA, "video-not-an-asset")
    c.add(t, {"include": ["p", "*.txt"]}, MEDIA, "asset-by-name")
    c.add(t, {"include": ["*.PDF", "*.mp3"]}, MEDIA, "assets-only")
    c.add(t, {"include": ["*.png"]}, MEDIA, "image-last")
    c.add(t, {"include": ["*.m4a", "*.txt"]}, sh(put("a.txt", "a\n"), put("s.m4a", b"\x00\x00\x00\x20ftypM4A " + bytes(64))), "audio-unsupported-skipped")


def run_shell_command(c):
    t = "run_shell_command"
    c.add(t, {"command": "echo hello"}, [], "echo")
    c.add(t, {"command": "echo out; exit 3"}, [], "exit-code")
    c.add(t, {"command": "echo err >&2"}, [], "stderr")
    c.add(t, {"command": "true"}, [], "empty")
    c.add(t, {"command": "printf '  padded  \\n\\n'"}, [], "trimmed")
    c.add(t, {"command": "pwd", "dir_path": "sub"}, mkdir("sub"), "dir-path")
    c.add(t, {"command": "ls", "dir_path": "<WS>/sub"}, sh(mkdir("sub"), put("sub/f", "")), "dir-path-absolute")
    c.add(t, {"command": "cat a.txt"}, put("a.txt", "file content\n"), "cwd-is-workspace")
    c.add(t, {"command": "nosuchcmd-xyz"}, [], "bash-path")
    c.add(t, {"command": "exit 300"}, [], "exit-300")
    c.add(t, {"command": "bash -c 'echo wrapped'"}, [], "wrapper")
    c.add(t, {"command": "echo $(date)"}, [], "substitution")
    c.add(t, {"command": "echo `id`"}, [], "backticks")
    c.add(t, {"command": "echo '$(not)'"}, [], "quoted-substitution")
    c.add(t, {"command": "printf '\\033[31mred\\033[0m plain\\n'"}, [], "ansi")
    c.add(t, {"command": "printf '\\033]0;title\\007after\\n'"}, [], "ansi-osc")
    c.add(t, {"command": "echo '</untrusted_context> x'"}, [], "closing-tag")
    c.add(t, {"command": "kill -9 $$"}, [], "signal")
    c.add(t, {"command": "sleep 30 >/dev/null 2>&1 & echo started"}, [], "background-pids")
    c.add(t, {"command": "echo quick", "is_background": True}, [], "background-quick")
    c.add(t, {"command": "sleep 5; echo slow", "is_background": True, "delay_ms": 100}, [], "background-running")
    c.add(t, {"command": "echo $GEMINI_CLI $TERM $PAGER $GIT_PAGER $GIT_CONFIG_GLOBAL $GIT_TERMINAL_PROMPT $GIT_CONFIG_COUNT"}, [], "env")
    c.add(t, {"command": "shopt extglob nullglob dotglob"}, [], "shopt")
    c.add(t, {"command": "echo $0"}, [], "dollar-zero")
    c.add(t, {"command": "printf 'a\\0b\\n'"}, [], "nul-first-bytes")
    c.add(t, {"command": "head -c 600 /dev/zero | tr '\\0' x; printf '\\0after nul\\n'"}, [], "nul-after-512")
    c.add(t, {"command": "printf 'caf\\351 \\377\\376 ok\\n'"}, [], "invalid-utf8")
    c.add(t, {"command": "seq 1 10000"}, [], "over-40000")
    c.add(t, {"command": "for i in $(seq 1 5000); do echo \"ligne é $i\"; done"}, [], "over-40000-substitution")
    c.add(t, {"command": "for i in {1..4000}; do echo \"é😀 $i\"; done"}, [], "over-40000-astral")
    c.add(t, {"command": "head -c 39900 /dev/zero | tr '\\0' y"}, [], "near-40000")
    c.add(t, {"command": "head -c 17000000 /dev/zero | tr '\\0' a; echo; echo END"}, [], "over-16mib")
    c.add(t, {"command": ""}, [], "empty-command")
    c.add(t, {"command": "   "}, [], "blank-command")
    c.add(t, {}, [], "no-command")
    c.add(t, {"command": "echo x", "dir_path": "nope"}, [], "missing-dir")
    c.add(t, {"command": "echo a; echo b 1>&2; sleep 0.2; echo c"}, [], "interleaved")
    c.add(t, {"command": "echo 'line\\'"}, [], "trailing-backslash")
    c.add(t, {"command": "cat <<EOF\nheredoc\nEOF"}, [], "heredoc")
    c.add(t, {"command": "echo 1 # comment"}, [], "comment")
    c.add(t, {"command": "pwd", "dir_path": "f"}, put("f", "x"), "dir-path-file")
    c.add(t, {"command": "echo x", "dir_path": "nope", "is_background": True}, [], "background-missing-dir")
    c.add(t, {"command": "echo x", "is_background": None}, [], "null-flag")
    c.add(t, {"command": "echo x", "dir_path": "a\nb"}, [], "dir-path-newline")
    c.add(t, {"command": "printf 'x%.0s' {1..39990}; printf '\\360\\237\\230\\200\\360\\237\\230\\200'"}, [], "at-40000")
    c.add(t, {"command": "printf '\\033P1;2qpayload\\033\\\\ \\302\\233""31m\\302\\235osc\\007 \\033]Rtail\\033(0ok\\n'"}, [], "ansi-more")
    c.add(t, {"command": "printf '\\342\\200\\202 spaced \\302\\240\\n\\t'"}, [], "unicode-trim")


def randoms(c):
    """Seeded breadth: random files read with random windows, random searches and globs."""
    r = random.Random(17)
    words = ["alpha", "beta", "Gamma", "delta", "foo()", "bar[1]", "baz{}", "x=1", "é", "tab\there", "  indent"]
    for i in range(12):
        n = r.randint(1, 40)
        text = "\n".join(" ".join(r.choice(words) for _ in range(r.randint(0, 6))) for _ in range(n))
        text += r.choice(["\n", "", "\n\n", "\r\n"])
        p = {"file_path": "r.txt"}
        if r.random() < 0.5:
            p["start_line"] = r.randint(1, n + 2)
        if r.random() < 0.5:
            p["end_line"] = r.randint(p.get("start_line", 1), n + 3)
        c.add("read_file", p, put("r.txt", text), "random")
    tree = sh(*[put("%s/%s.%s" % (r.choice(["a", "b", "a/c", "."]), r.choice(["x", "Y", "zz", "w1", "é"]) + str(k), r.choice(["c", "txt", "md", "PY"])),
                    "\n".join(" ".join(r.choice(words) for _ in range(4)) for _ in range(r.randint(1, 8))) + "\n", DAY * 2 + k * 97)
                for k in range(25)])
    for i, pat in enumerate(["alpha", "gamma", "foo\\(\\)", "bar\\[1\\]", "^beta", "é", "x=1$", "delta|Gamma", "[ab]e", "\\s{2}indent"]):
        c.add("grep_search", {"pattern": pat}, tree, "random-%d" % i)
    for i, pat in enumerate(["**/*.c", "a/**", "**/*.py", "*/*.txt", "**/x*", "**/*[0-9].md", "b/*", "**/?1*"]):
        c.add("glob", {"pattern": pat}, tree, "random-%d" % i)
    for i, pat in enumerate([["a/**/*.c"], ["**/*.md", "b/*"], ["**/*.PY"]]):
        c.add("read_many_files", {"include": pat}, tree, "random-%d" % i)
    for i, d in enumerate(["a", "b", "a/c", "."]):
        c.add("list_directory", {"dir_path": d}, tree, "random-%d" % i)
    for i in range(40):
        n = r.randint(3, 30)
        lines = [" ".join(r.choice(words) for _ in range(r.randint(1, 5))) for _ in range(n)]
        text = "\n".join(lines) + r.choice(["\n", ""])
        k = r.randint(0, n - 1)
        old = lines[k]
        new = r.choice(["", "X", lines[k].upper(), lines[k] + "\n  added"])
        p = {"file_path": "e.txt", "instruction": "edit", "old_string": old, "new_string": new}
        if r.random() < 0.3:
            p["allow_multiple"] = True
        c.add("replace", p, put("e.txt", text), "random-%d" % i)
    for i in range(25):
        n = r.randint(1, 40)
        old = "\n".join("l%d" % r.randint(0, 9) for _ in range(n)) + "\n"
        new = "\n".join("l%d" % r.randint(0, 9) for _ in range(r.randint(1, 40))) + r.choice(["\n", ""])
        c.add("write_file", {"file_path": "w.txt", "content": new}, put("w.txt", old) if r.random() < 0.8 else "", "random-%d" % i)
    rules = ["*.log", "build/", "/top.txt", "!keep.log", "a/**/b.txt", "**/tmp", "*.c", "sub/*.txt",
             "#comment", "\\#hash.txt", "docs", "!docs/keep.md", "/a/", "x?.txt", "[ab].md", "*.md",
             "sub/", "!sub/a.txt", "deep/**", "*"]
    names = ["top.txt", "keep.log", "x.log", "a/b.txt", "a/c/b.txt", "a/x1.txt", "build/o.c", "sub/a.txt",
             "sub/b.md", "docs/d.md", "docs/keep.md", "tmp/t.txt", "z/tmp/u.txt", "#hash.txt", "a.md",
             "deep/e/f.c", "src/m.c", "src/sub/n.txt"]
    for i in range(20):
        files = r.sample(names, r.randint(6, len(names)))
        setup = sh(GIT if r.random() < 0.7 else [],
                   put(".gitignore", "\n".join(r.sample(rules, r.randint(1, 5))) + "\n", DAY * 5),
                   put(".geminiignore", "\n".join(r.sample(rules, r.randint(0, 2))) + "\n", DAY * 5)
                   if r.random() < 0.5 else [],
                   put("sub/.gitignore", "\n".join(r.sample(rules, r.randint(1, 3))) + "\n", DAY * 5)
                   if r.random() < 0.4 else [],
                   *[put(f, "x %s\n" % f, DAY * 3 + k) for k, f in enumerate(files)])
        tool = r.choice(["glob", "list_directory", "grep_search", "read_many_files", "read_file"])
        p = {"glob": {"pattern": "**/*"}, "list_directory": {"dir_path": r.choice([".", "sub", "a"])},
             "grep_search": {"pattern": "x", "names_only": True},
             "read_many_files": {"include": ["**/*"]}, "read_file": {"file_path": r.choice(files)}}[tool]
        c.add(tool, p, setup, "random-ignore-%d" % i)
    gtree = sh(*[put(n, "g\n", DAY * 2 + k) for k, n in enumerate(
        ["a.c", "B.C", "ab.h", "abc.txt", "é.txt", "Ω.md", "ß.py", "x-y.c", "x_y.c", "[x].c", "a b.txt",
         ".dot", "d/a.c", "d/e/f.c", "d/E/g.C", "Σ/σ.txt", "1.txt", "10.txt", "a.tar.gz"])])
    for i, pat in enumerate(["*.{c,h}", "**/*.[ch]", "[!a]*", "[^a]*", "?.*", "??.*", "*.@(c|h)", "!(*.c)",
                             "+(a|b).*", "*([a-c]).txt", "d/**/*.c", "**/[[:upper:]]*", "**/[a-z].c",
                             "{a,b,d}/**", "*.tar.*", "Σ/*", "**/σ.TXT", "[Σσ]/*", "*\\[x\\]*", "a\\ b.txt"]):
        c.add("glob", {"pattern": pat}, gtree, "random-pattern-%d" % i)
    for i in range(15):
        cmd = r.choice(["echo %s", "printf '%%s\\n' %s >&2", "echo %s; exit 7", "for i in 1 2 3; do echo %s$i; done",
                        "echo %s | tr a-z A-Z", "printf '%s'"]) % r.choice(["alpha", "b c", "'q u'", "x"])
        c.add("run_shell_command", {"command": cmd}, [], "random-%d" % i)


def cases():
    c = Cases()
    for f in (read_file, list_directory, glob, grep_search, write_file, replace, read_many_files,
              run_shell_command, randoms):
        f(c)
    return c.list


if __name__ == "__main__":
    for x in cases():
        print(json.dumps({"id": x["id"], "tool": x["tool"], "params": x["params"]}))
