"""Stand-in for the upstream harbor/export.py in the SYNTHETIC afbench demo release.

It accepts the upstream arguments and exports nothing: the demo has no Lean workspaces.
"""
import argparse
import sys

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--problem", required=True)
parser.add_argument("--check", action="store_true")
args = parser.parse_args()
print(f"synthetic demo release: nothing to export for {args.problem}", file=sys.stderr)
sys.exit(3)
