/**
 * Exit code of a process that cannot run as configured (an invalid variable, a port already in use):
 * sysexits' EX_CONFIG. `npm start`'s supervisor does not restart such a process, since a restart would
 * fail the same way (docs/resilience.md). A module of its own, without dependencies, so that
 * `npm start` can use it before it loads anything else; it sits in telemetry because the telemetry
 * hook is the first code every process runs, and its settings are checked there.
 */
export const EXIT_CONFIG = 78;
