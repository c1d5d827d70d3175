// Package identity says what decides a run's scores beyond its config
// file: each judge as it is actually called (environment fallbacks such
// as ANVIL_JUDGE_MODEL and OPENAI_BASE_URL applied) and the code of the
// kinds linked into the host; and what each case asks, apart from what
// the system under test answered. It digests them and names their
// differences, so that results of two answerers are never mixed or
// compared unawares: a resumed run, a cluster worker and `compare` check
// identities, not only the config hash.
//
// Invariants:
//   - A judge's identity holds every setting that changes a request or how
//     its reply is weighted (TestEveryJudgeSettingIsClassified fails until a
//     new judgeconfig.Config field is classified), and never a key: only
//     what the config and the environment say of the endpoint, with any
//     user or password dropped from the base URL.
//   - A Run's digest covers its judges and kinds; every results line
//     carries it, and with it its case's CaseDigest.
//   - Pure: no I/O, no environment. The engine resolves; this package only
//     describes and compares.
package identity
