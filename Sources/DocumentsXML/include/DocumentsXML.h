#ifndef DOCUMENTS_XML_H
#define DOCUMENTS_XML_H

#include <stddef.h>

/// What reading one XML document found. Every pointer is owned by the result and freed by
/// documents_xml_result_free; the text is UTF-8 and not NUL-terminated.
typedef struct documents_xml_result {
    /// 1 when the document is well-formed XML 1.0 with a root element; 0 otherwise.
    int well_formed;
    /// The character data, with a space for every tag, so words in adjacent elements stay apart.
    char *_Nullable text;
    size_t text_length;
    /// The text of the first <title> element, or NULL when there is none.
    char *_Nullable title;
    size_t title_length;
    /// Where and why the document is not well-formed (line 0 when unknown); NULL when it is.
    int error_line;
    char *_Nullable error_message;
} documents_xml_result;

/// Reads `length` bytes as an XML document through libxml2, without building a tree.
///
/// Internal DTD subsets and their entities work; no external entity or DTD is ever loaded (a
/// reference to an external entity makes the document malformed), nothing is fetched from a
/// network, and libxml2's limits on entity expansion stay on.
void documents_xml_parse(const void *_Nonnull bytes, size_t length, documents_xml_result *_Nonnull result);

/// Frees what documents_xml_parse put in `result`.
void documents_xml_result_free(documents_xml_result *_Nonnull result);

#endif
