/* version.h — the one place the sbx version is written: every program's --version says it. */
#ifndef SBX_VERSION_H
#define SBX_VERSION_H

#define SBX_VERSION "0.1.0"

#endif
