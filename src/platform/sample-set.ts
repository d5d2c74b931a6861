/** Samples of one run: timestamps (s since `originMs`) and one value array per series. */
export interface SampleSet {
  originMs: number;
  times: number[];
  values: number[][];
}
