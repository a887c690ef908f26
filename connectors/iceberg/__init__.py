from lakegate.connectors.iceberg import avroreaders, txncache

txncache.install()  # before any lake write (see txncache)
avroreaders.install()  # Avro reader trees built once per schema (see avroreaders)
