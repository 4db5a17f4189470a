// SPYRE_DMA_VECTOR_CLONES marks a function whose loop is worth building for each x86-64 vector
// width (AVX-512, AVX2 and the baseline): GCC compiles one copy per width and the dynamic loader
// picks the one the CPU runs, once, at load. The project is built for the x86-64 baseline, where a
// loop of 64-bit multiplies stays scalar; these loops (the scoreboard's data pattern, the digest's
// hash) go through every byte a test holds, and run at the speed of memory only when vectorised.
// The result is the same bits on every width. Elsewhere (Clang, other CPUs) the macro is empty, and
// so it is in sanitized builds, which are not about speed: the loader runs the clones' resolver
// before a sanitizer's runtime is up, and under ThreadSanitizer a process with them crashed at load.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define SPYRE_DMA_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), optimize("tree-vectorize")))
#else
#define SPYRE_DMA_VECTOR_CLONES
#endif
