# shellcheck shell=bash
# quick_jvms: the settings of every JVM the scripts start through Maven (Maven itself, with
# kotlinc inside it; surefire's fork gets them as -DargLine=$MAVEN_OPTS): the C1 compiler
# only and the serial collector. Each lives a minute at most on two cores, where C2's
# compiles of kotlinc never pay back: the Kotlin suite took 50 CPU-s instead of 87 (the same
# 213 tests, warm build, measured side by side). A MAVEN_OPTS already set is kept.
quick_jvms() {
    export MAVEN_OPTS="${MAVEN_OPTS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC}"
}
