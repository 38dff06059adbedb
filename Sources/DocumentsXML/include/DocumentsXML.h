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
/// Internal DTD subsets and their entities work. No external entity or DTD is ever loaded, and
/// nothing is fetched from a network: a reference to an external general entity makes the document
/// malformed; an external DTD or parameter entity is skipped, and so are the entities only it could
/// declare (XML 1.0 makes them a validity matter, not a well-formedness one), but for the HTML 4
/// entity sets of the well-known XHTML and HTML 4.01 DTDs, which are built in. Namespace errors
/// don't make a document malformed. libxml2's limits on entity expansion stay on.
void documents_xml_parse(const void *_Nonnull bytes, size_t length, documents_xml_result *_Nonnull result);

/// Frees what documents_xml_parse put in `result`.
void documents_xml_result_free(documents_xml_result *_Nonnull result);

#endif
