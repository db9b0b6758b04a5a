#!/bin/bash
# Runs once, when the influxdb:2.x container initialises: InfluxQL (Grafana's data source, the v1
# compatibility API) needs a database/retention-policy mapping onto the bucket.
set -euo pipefail
bucket_id=$(influx bucket list --name "${DOCKER_INFLUXDB_INIT_BUCKET}" --hide-headers | cut -f1)
influx v1 dbrp create --db groupings --rp autogen --bucket-id "${bucket_id}" --default
