#pragma once

// The exit statuses of `ringtrain`: what a job script can branch on. Every failure also prints
// one `ringtrain: error: ...` line (a usage error: CLI11's message) saying what went wrong.
namespace ringtrain::exit_code {

constexpr int kOk = 0;
// Any other failure: a missing or malformed file, an MPI or device error, a failing rank.
constexpr int kError = 1;
// The command line or the configuration is wrong (a flag out of range, an inconsistent
// combination): nothing was trained. As shells and CLI11 users expect.
constexpr int kUsage = 2;
// Training diverged: the train or test loss became NaN or infinite (sysexits' EX_DATAERR).
// Rerunning the same job fails the same way: lower --lr, or use --amp bf16 instead of fp16.
constexpr int kDiverged = 65;
// Stopped by SIGTERM or SIGUSR1 after writing a checkpoint (sysexits' EX_TEMPFAIL): requeue.
constexpr int kStoppedBySignal = 75;

}  // namespace ringtrain::exit_code
