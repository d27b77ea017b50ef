/**
 * An anytime-valid test of "recall at a threshold is at least τ" by betting, for labels drawn
 * without replacement (the betting confidence sequences of Waudby-Smith and Ramdas, "Estimating
 * means of bounded random variables by betting", JRSS B 2024, and "Confidence sequences for
 * sampling without replacement", NeurIPS 2020), one test across all the design's strata.
 *
 * Each labelled paper scores g = (1 − τ) if it is an include kept at the threshold, −τ if an
 * include below it, 0 if excluded. Over the whole job the scores sum to G = (1 − τ)A − τB, A the
 * kept and B the missed includes, so recall < τ exactly when G < 0: one number to test, whatever
 * the strata. Sampling without replacement, the next paper's expected score is the rest of G over
 * the papers left, known once G is fixed; stratified, the next paper comes from stratum h with
 * probability (n_h − m_h)/(n − i) and is then uniform over its N_h − m_h unlabelled papers, so its
 * score weighted by c_h = (N_h − m_h)/(n_h − m_h) has expectation (G − S)/(n − i), S the scores seen
 * (a stratum whose sampled papers are all labelled leaves that sum: its unknown rest is taken at its
 * worst, which keeps the bet a supermartingale). At the null's edge G = 0 the wealth
 *
 *   W = Π_i (1 + λ_i (z_i − μ_i)),   z_i = c·g_i,   μ_i its expectation at G = 0,
 *
 * is a nonnegative supermartingale for every job whose recall is below τ (a larger G only lowers
 * μ_i), so by Ville's inequality it ever reaches 1/α with probability at most α: certifying when it
 * does is valid at every look, however often. The strata are tested jointly (one wealth for the
 * design, no Bonferroni) and no error is split between the kept and the missed includes.
 *
 * The bets: λ_i = f·κ_i/τ, κ_i the largest fraction the worst outcome allows (fixed before the
 * paper is seen), and the wealth is the average over a few fractions f ("diversified Kelly"). Most
 * of the weight is on f = 1, the bet that nothing below the threshold is included: a screener at its
 * certified threshold rarely misses a sampled include, and then the wealth grows by about 1/τ per
 * include, as the one-look bound does (59 includes at 95%, a few more for the weight). The other
 * fractions carry the case with misses. Every factor falls as τ rises, so the tests are nested and
 * the largest τ certified is a lower confidence bound on recall, valid at every look.
 */

/** Bet fractions and their weights (adding to 1). */
const FRACTIONS = [1, 0.85, 0.6, 0.35];
const WEIGHTS = [0.55, 0.2, 0.15, 0.1];

/** A stratum of the design: its papers, how many the sample holds, and whether they are kept at the threshold. */
export interface BetStratum {
  papers: number;
  /** Papers of it in the sample (the whole stratum for a simple sample: its order is a random order of the job). */
  sampled: number;
  kept: boolean;
}

/** The wealth of the bet on recall ≥ τ at one threshold, updated label by label. */
export class RecallBet {
  readonly #strata: readonly BetStratum[];
  readonly #tau: number;
  readonly #labelled: number[];
  readonly #total: number;
  /** Σ g over the labels so far, and the below includes among them. */
  #sum = 0;
  #missedSeen = 0;
  #steps = 0;
  readonly #wealth = FRACTIONS.map(() => 1);
  #certain = false;

  constructor(strata: readonly BetStratum[], tau: number) {
    this.#strata = strata;
    this.#tau = tau;
    this.#labelled = strata.map(() => 0);
    this.#total = strata.reduce((s, h) => s + h.sampled, 0);
  }

  /** Adds the next label in the sample's order: a paper of stratum h, included or not. */
  push(h: number, included: boolean): void {
    const s = this.#strata[h]!;
    const m = this.#labelled[h]!;
    if (m >= s.sampled) throw new RangeError(`stratum ${h} has no sampled paper left to label`);
    const g = included ? (s.kept ? 1 - this.#tau : -this.#tau) : 0;
    if (!this.#certain) this.#bet(s.papers - m, s.sampled - m, g);
    this.#labelled[h]!++;
    this.#sum += g;
    this.#steps++;
    if (included && !s.kept) this.#missedSeen++;
    // Settled: even if every unlabelled paper below the threshold were included, G would stay ≥ 0.
    let unlabelledBelow = 0;
    this.#strata.forEach((t, i) => (unlabelledBelow += t.kept ? 0 : t.papers - this.#labelled[i]!));
    if (this.#sum >= this.#tau * unlabelledBelow && this.#sum > 0) this.#certain = true;
  }

  /** One bet on a paper of a stratum with `unlabelled` papers of which `unsampled` are still in the sample. */
  #bet(unlabelled: number, unsampledLeft: number, g: number): void {
    let exhaustedBelow = 0;
    let worst = 0;
    this.#strata.forEach((t, i) => {
      const m = this.#labelled[i]!;
      if (t.kept) return;
      if (m >= t.sampled) exhaustedBelow += t.papers - m;
      else worst = Math.max(worst, (t.papers - m) / (t.sampled - m));
    });
    const left = this.#total - this.#steps;
    // μ: the expected weighted score at the null's edge G = 0, the rest of an exhausted below stratum at its worst.
    const mu = (-this.#sum + this.#tau * exhaustedBelow) / left;
    // κ: the largest λτ that keeps every factor nonnegative whatever the paper turns out to be, at every τ ≤ 1
    // (the worst is a below include of the heaviest stratum; μ/τ is largest at τ = 1).
    const spread = worst + (this.#missedSeen + exhaustedBelow) / left;
    if (spread <= 0) return;
    const kappa = 1 / spread;
    const z = (unlabelled / unsampledLeft) * g;
    for (let j = 0; j < FRACTIONS.length; j++) this.#wealth[j]! *= Math.max(0, 1 + ((FRACTIONS[j]! * kappa) / this.#tau) * (z - mu));
  }

  /** The mixture wealth (Infinity once the labels settle it). */
  wealth(): number {
    if (this.#certain) return Infinity;
    return this.#wealth.reduce((s, w, j) => s + WEIGHTS[j]! * w, 0);
  }
}

/** One label in the sample's order: the index of its stratum and whether it is included. */
export interface SequenceLabel {
  stratum: number;
  included: boolean;
}

/** Whether the labels so far certify recall ≥ τ at error α. */
export function betCertifies(strata: readonly BetStratum[], labels: readonly SequenceLabel[], tau: number, alpha: number): boolean {
  const bet = new RecallBet(strata, tau);
  for (const label of labels) bet.push(label.stratum, label.included);
  return bet.wealth() >= 1 / alpha;
}

/** The largest recall certified at error α (nested tests: a lower confidence bound valid at every look), to 1e-4. */
export function betRecallLower(strata: readonly BetStratum[], labels: readonly SequenceLabel[], alpha: number): number {
  let lo = 0;
  let hi = 1;
  while (hi - lo > 1e-4) {
    const mid = (lo + hi) / 2;
    if (betCertifies(strata, labels, mid, alpha)) lo = mid;
    else hi = mid;
  }
  return lo;
}
