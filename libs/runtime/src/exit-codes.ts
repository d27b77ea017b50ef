/**
 * Exit code of a process that cannot run as configured (an invalid variable, a port already in use):
 * sysexits' EX_CONFIG. `npm start`'s supervisor does not restart such a process, since a restart would
 * fail the same way (docs/resilience.md). A module of its own, without dependencies, so that
 * `npm start` can use it before it loads anything else.
 */
export const EXIT_CONFIG = 78;
