from lakegate.connectors.iceberg import avroreaders, snapshotindex, txncache

txncache.install()  # before any lake write (see txncache)
avroreaders.install()  # Avro reader trees built once per schema (see avroreaders)
snapshotindex.install()  # snapshots looked up by id through an index (see snapshotindex)
