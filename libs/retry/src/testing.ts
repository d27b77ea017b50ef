/** A retry clock for tests: sleeps return at once and only move virtual time, recording each delay. */
export function virtualClock() {
  const clock = {
    time: 0,
    sleeps: [] as number[],
    now: () => clock.time,
    random: () => 0.5,
    sleep: async (ms: number) => {
      clock.sleeps.push(ms);
      clock.time += ms;
    },
  };
  return clock;
}
