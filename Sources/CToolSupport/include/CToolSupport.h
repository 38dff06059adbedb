#ifndef C_TOOL_SUPPORT_H
#define C_TOOL_SUPPORT_H

/// 1 if standard output was closed when the process started; it is then held open on /dev/null,
/// read-only, so that writing to it fails and no file opened later can take its place.
int c_tool_support_output_was_closed(void);

#endif
