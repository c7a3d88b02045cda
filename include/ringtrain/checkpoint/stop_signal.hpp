#pragma once

namespace ringtrain {

// SIGTERM and SIGUSR1 (what Slurm sends before a time limit, and what mpirun forwards) ask a
// training run to stop at its next step boundary with a checkpoint. The handlers only record
// the request; they stay installed until the process exits, so a signal that arrives during
// start-up, after the stop was decided or during shutdown is recorded, never fatal. The first
// signal is the request; later ones change nothing.

// Installs the handlers (SA_RESTART: reads and writes in progress are not interrupted). Call it
// before any long work, MPI_Init included; calling it again changes nothing. Throws naming the
// call when sigaction fails. A write to a stream output (a FIFO) that waits for its reader gives
// up once a stop is requested (set_stream_stop_check).
void install_stop_signal_handlers();

// The first stop signal received (SIGTERM or SIGUSR1), or 0.
int stop_signal_received();

// How many stop signals have arrived in all.
int stop_signals_received();

// "SIGTERM" or "SIGUSR1".
const char* stop_signal_name(int signal);

}  // namespace ringtrain
