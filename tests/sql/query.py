"""Runs one query of docs/at-scale.md, as written there, in DuckDB or chDB.

    query.py DOC ENGINE NAME PARAMS_JSON

ENGINE is duckdb or clickhouse; NAME the block's name (the `<!-- query:
ENGINE/NAME -->` comment above it). The {placeholders} are filled from
PARAMS_JSON. Prints the rows as one JSON array of arrays of strings (or null).
"""

import json
import re
import sys


def block(doc: str, engine: str, name: str) -> str:
    pattern = rf"<!-- query: {engine}/{name} -->\n```sql\n(.*?)\n```"
    found = re.search(pattern, doc, re.S)
    if not found:
        sys.exit(f"no query {engine}/{name} in the doc")
    return found.group(1)


def main() -> None:
    doc_path, engine, name, params = sys.argv[1:5]
    with open(doc_path, encoding="utf-8") as f:
        sql = block(f.read(), engine, name).format(**json.loads(params))
    if engine == "duckdb":
        import duckdb

        rows = duckdb.sql(sql).fetchall()
    elif engine == "clickhouse":
        import chdb

        out = chdb.query(sql, "JSONCompactEachRow")
        rows = [json.loads(line) for line in str(out).splitlines() if line.strip()]
    else:
        sys.exit(f"unknown engine {engine}")
    print(json.dumps([[None if v is None else str(v) for v in row] for row in rows]))


if __name__ == "__main__":
    main()
