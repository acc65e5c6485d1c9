"""Load a testbed result bundle into pandas: every data/*.csv table typed
from datapackage.json (units kept in DataFrame.attrs), and summary.json
flattened to one row whose columns are the metric paths."""
import json
import pathlib
import sys

import pandas as pd

# Frictionless field types -> pandas dtypes (nullable, so empty cells stay NA).
DTYPES = {"integer": "Int64", "number": "float64", "boolean": "boolean", "string": "string"}


def load_bundle(path):
    bundle = pathlib.Path(path)
    package = json.loads((bundle / "datapackage.json").read_text())
    tables = {}
    for resource in package["resources"]:
        if resource.get("profile") != "tabular-data-resource":
            continue  # a file a recipe exports (a controller's config), not a table
        fields = resource["schema"]["fields"]
        dtypes = {f["name"]: DTYPES.get(f["type"], "string") for f in fields}
        table = pd.read_csv(bundle / resource["path"], dtype=dtypes)  # .csv.gz too
        table.attrs["units"] = {f["name"]: f.get("unit", "") for f in fields}
        tables[resource["name"]] = table
    summary = pd.json_normalize(json.loads((bundle / "summary.json").read_text()), sep=".")
    return tables, summary


if __name__ == "__main__":
    tables, summary = load_bundle(sys.argv[1])
    for name, table in tables.items():
        print(f"table {name}: {len(table)} rows, columns {', '.join(f'{c} [{table[c].dtype}]' for c in table.columns)}")
    print(f"summary: {summary.shape[1]} metrics")
    for column in summary.columns[:5]:
        print(f"  {column} = {summary.at[0, column]}")
