#!/usr/bin/env bash
# Installs @confluentinc/kafka-javascript 1.10.1 (librdkafka 2.15.1) into test/librdkafka/node_modules
# for `npm run test:librdkafka`. It is a native addon, so it is kept out of the main package: `npm ci`
# there would build it every time.
#
# How it builds: the package's prebuilt binaries are downloaded from GitHub and its default source
# build downloads zlib, OpenSSL, zstd and curl sources, neither of which a machine with only the npm
# registry can reach. CKJS_LINKING=dynamic builds the bundled librdkafka against the system's
# OpenSSL and zlib instead (about 70 s on 2 cores): it needs a C/C++ toolchain, make, python3 and the
# OpenSSL and zlib headers (Debian: build-essential python3 libssl-dev zlib1g-dev; .ci/run installs
# them when missing). An install that loads is kept; delete node_modules here to rebuild.
set -euo pipefail
cd "$(dirname "$0")"
for tool in cc c++ make python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "test/librdkafka/install.sh: '$tool' is needed to build librdkafka (Debian: apt-get install -y build-essential python3 libssl-dev zlib1g-dev)" >&2
    exit 1
  fi
done
if node -e "require('@confluentinc/kafka-javascript')" >/dev/null 2>&1; then
  echo "test/librdkafka: @confluentinc/kafka-javascript is installed and loads"
  exit 0
fi
CKJS_LINKING=dynamic npm ci --no-audit --no-fund
node -e "console.log('test/librdkafka: librdkafka', require('@confluentinc/kafka-javascript').librdkafkaVersion)"
