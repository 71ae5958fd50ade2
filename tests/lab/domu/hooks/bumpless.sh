#!/bin/sh
# bumpless: the guest side of tests/lab/scenarios/bumpless.sh. Runs
# libfoguest's example control application (fo-plant, carried by scenarios
# with "# domu-bins: fo-plant") instead of fo-heartbeat (the scenario boots
# the domU with fo.noagent), restarting it if it exits.
#   plant.KEY=VALUE -> fo-plant --KEY VALUE   (plant.period-ms=5)
#   plant.KEY       -> fo-plant --KEY         (plant.test-commands)
args=""
for tok in $(cat /proc/cmdline); do
	case $tok in
	plant.*=*) kv=${tok#plant.}; args="$args --${kv%%=*} ${kv#*=}" ;;
	plant.*) args="$args --${tok#plant.}" ;;
	esac
done
if [ ! -x /usr/bin/fo-plant ]; then
	echo "== bumpless: no fo-plant in this image"
	exit 1
fi
echo "== bumpless: fo-plant$args"
while :; do
	/usr/bin/fo-plant $args
	echo "== bumpless: fo-plant exited rc=$?"
	sleep 1
done
