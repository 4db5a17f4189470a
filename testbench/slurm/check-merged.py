#!/usr/bin/env python3
"""Usage: check-merged.py OUT A..B SEED

Checks the merged report that scripts/regress-slurm wrote to OUT for a run over seeds A..B in
which seed SEED's test was corrupted on purpose: OUT/merged.xml (JUnit) has one test case per
seed, exactly one of them failed, the one that names SEED, and none was skipped; OUT/merged.json
says the same (SEED's test "fail", every other one "pass"). Exit status 0 when it is so, else 1.
"""
import json
import re
import sys
import xml.etree.ElementTree as ET


def main() -> int:
    out, seeds, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    first, last = (int(x) for x in seeds.split(".."))
    want = last - first + 1
    problems = []

    def check(cond, msg):
        if not cond:
            problems.append(msg)

    cases = list(ET.parse(f"{out}/merged.xml").getroot().iter("testcase"))

    def text(case):  # everything that may name the test's seed
        parts = [case.get("name", ""), case.get("classname", "")]
        parts += [f"{p.get('name')}={p.get('value')}" for p in case.iter("property")]
        return " ".join(parts)

    failed = [c for c in cases if c.find("failure") is not None or c.find("error") is not None]
    skipped = [c for c in cases if c.find("skipped") is not None]
    print(f"merged.xml: {len(cases)} test cases, {len(failed)} failed, {len(skipped)} skipped")
    for c in failed:
        print(f"  failed: {text(c)}")
    check(len(cases) == want, f"expected {want} test cases (seeds {seeds}), got {len(cases)}")
    check(len(failed) == 1, f"expected exactly 1 failed test case, got {len(failed)}")
    if len(failed) == 1:
        check(re.search(rf"seed\D{{0,3}}{seed}(?!\d)", text(failed[0]), re.I),
              f"the failed test case does not name seed {seed}")
    check(not skipped, "expected no skipped test cases")

    with open(f"{out}/merged.json") as f:
        tests = json.load(f)["tests"]
    status = {t.get("seed"): t.get("status") for t in tests}
    print(f"merged.json: {len(tests)} tests, statuses {sorted(set(map(str, status.values())))}")
    check(len(tests) == want and sorted(status) == list(range(first, last + 1)),
          f"merged.json: expected one test per seed of {seeds}, got seeds {sorted(status)}")
    check(status.get(seed) == "fail", f"merged.json: seed {seed} has status {status.get(seed)!r}, expected 'fail'")
    check(all(v == "pass" for k, v in status.items() if k != seed),
          "merged.json: a test other than the corrupted seed's did not pass")

    for p in problems:
        print(f"  {p}")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
