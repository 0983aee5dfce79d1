# common-work.sh — what tests/attacks.bats runs in a sandbox to show the syscall filter
# leaves ordinary work alone: python3 with ssl, sqlite3 and subprocess, gcc, git, pip
# installing a local wheel, node when the host has it.
set -e
python3 -c 'import ssl, sqlite3, subprocess
c = sqlite3.connect(":memory:"); c.execute("create table t(x)"); c.execute("insert into t values (7)")
print("python", ssl.OPENSSL_VERSION.split()[0], c.execute("select x from t").fetchone()[0], subprocess.run(["echo", "sub"], capture_output=True, text=True).stdout.strip())'
printf '#include <stdio.h>\nint main(void) { puts("compiled and ran"); return 0; }\n' >hello.c
gcc -o hello hello.c
./hello
git init -q repo
echo hi >repo/f
git -C repo add f
git -C repo -c user.email=sbx@example.invalid -c user.name=sbx commit -q -m first
echo "git $(git -C repo log --oneline | wc -l) commit"
python3 -c 'import zipfile
with zipfile.ZipFile("sbxdemo-1.0-py3-none-any.whl", "w") as z:
    z.writestr("sbxdemo/__init__.py", "def hello():\n    return \"wheel installed\"\n")
    z.writestr("sbxdemo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: sbxdemo\nVersion: 1.0\n")
    z.writestr("sbxdemo-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: sbx\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("sbxdemo-1.0.dist-info/RECORD", "")'
python3 -m pip install -q --root-user-action=ignore --no-index --no-deps --target pkgs ./sbxdemo-1.0-py3-none-any.whl
PYTHONPATH=pkgs python3 -c 'import sbxdemo; print(sbxdemo.hello())'
if command -v node >/dev/null; then node -e 'console.log("node", 6 * 7)'; fi
