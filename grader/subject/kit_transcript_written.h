/**
 * @file kit_transcript_written.h
 * @brief Included into the subject's copy of a test program whose graded
 *        tests are written down (chNN_written in the chapter's build.mk):
 *        which of its tests those are, for kit_transcript.c to find.
 */
#ifndef KIT_TRANSCRIPT_WRITTEN_H
#define KIT_TRANSCRIPT_WRITTEN_H

/** The tests, by name, one space between two. */
const char kit_transcript_written[] = KIT_TRANSCRIPT_WRITTEN;

#endif
