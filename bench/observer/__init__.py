"""Storm's DistributionObserverBolt on the driver: progress listener, tick logic, InfluxDB, topic."""
