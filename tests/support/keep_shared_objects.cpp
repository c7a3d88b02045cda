// A dlclose that keeps every shared object loaded, preloaded (LD_PRELOAD) by the debug test
// preset so that LeakSanitizer can name the library of each allocation at exit.
//
// Note: Open MPI and PMIx load their components with dlopen and unload them in MPI_Finalize.
// What those components allocate and never free is reported at exit with frames in an
// "<unknown module>", which no suppression can match. The alternative, fast_unwind_on_malloc=0,
// walks every allocation's whole stack through the libraries' unwind tables: it made the
// scripted tests three times slower under AddressSanitizer. With the components kept, the
// allocating frame is named (mca_..., libpmix) and tests/lsan.supp matches it on the fast
// frame-pointer stack.
extern "C" int dlclose(void* /*handle*/) {
  return 0;
}
