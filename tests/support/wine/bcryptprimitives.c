/*
 * A stand-in for Windows' bcryptprimitives.dll, for running the Windows
 * build under Wine in tests (scripts/wine-test.sh). NEVER shipped.
 *
 * Rust's std (since 1.78) gets its randomness from ProcessPrng in
 * bcryptprimitives.dll, which Windows 10 and 11 have and Wine 8 does not:
 * without it every Rust .exe fails to start with status c0000135. This DLL,
 * copied next to each .exe under test, exports that one function and
 * forwards it to RtlGenRandom (advapi32's SystemFunction036), which Wine
 * has.
 *
 *   x86_64-w64-mingw32-gcc -shared -O2 -o bcryptprimitives.dll \
 *       bcryptprimitives.c -ladvapi32 -Wl,--kill-at
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
