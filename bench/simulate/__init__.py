"""`bench simulate`: the groupings in-process over a dataset or a recorded topic, no Kafka or Spark in the routing path."""
