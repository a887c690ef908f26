from lakegate.connectors.iceberg import txncache

txncache.install()  # before any lake write (see txncache)
