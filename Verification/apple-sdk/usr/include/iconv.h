#pragma once
typedef void *iconv_t;
