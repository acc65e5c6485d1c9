"""Validate JSON files against the bundle and inventory schemas:
validate.py SCHEMA FILE... (exit 1 naming each file that does not fit)."""
import json
import sys

import jsonschema

schema = json.load(open(sys.argv[1]))
validator = jsonschema.Draft202012Validator(schema)
bad = 0
for path in sys.argv[2:]:
    for error in validator.iter_errors(json.load(open(path))):
        bad += 1
        print(f"{path}: {'/'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message[:300]}")
print(f"{len(sys.argv) - 2} files checked against {sys.argv[1]}, {bad} errors")
sys.exit(1 if bad else 0)
