"""Large audits: bounded-memory streaming, resumable partitioned output, Dask scale-out.

- :mod:`core.scale.sources` — partitioned reading of Parquet / CSV in bounded memory.
- :mod:`core.scale.store` — the output folder: atomic partition files, manifest, journal, lock.
- :mod:`core.scale.runner` — runs a per-partition task locally or on a Dask cluster.
- :mod:`core.scale.cluster` — connects to an existing Dask scheduler or starts a local cluster.
- :mod:`core.scale.certify` — certificates of every row of a large table (``certify`` command).
- :mod:`core.scale.paired_grid` — the paired identification grid over many cells, on Dask.
- :mod:`core.scale.synthetic` — seeded synthetic tables resembling a bundled dataset.

Nothing here imports Streamlit; ``dask.distributed`` is imported only when the Dask engine is used.
"""
